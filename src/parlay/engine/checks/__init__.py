"""The checks a reply passes before anyone sees it, and what happens when one fails.

- `retry`: the `Check` protocol, `DEFAULT_CHECKS` in the order they are judged, the
  `RetryPolicy` that applies them, and `CallRule`, the short form of a check of each call;
- `rules`: every rule by name (`RULES`), and which are switched off;
- `calls`: what is wrong with one call (unknown tool, arguments, made-up values, a repeat);
- one module per kind of evidence a check reads: `confidence` (the model's own
  probabilities, held against `min_call_confidence`), `refusal`, `placeholders` and
  `own_words` (parlay's own text coming back), `echo_trim`, `results_answer`.

Write your own check against `Check`, `Evidence` and `Verdict`, imported from here.
"""

from parlay.engine.checks.retry import DEFAULT_CHECKS, CallRule, Check, Evidence, Verdict

__all__ = ["DEFAULT_CHECKS", "CallRule", "Check", "Evidence", "Verdict"]
