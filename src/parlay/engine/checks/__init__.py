"""The checks a reply passes before anyone sees it, and what happens when one fails.

- `check`: what a check is made of: the `Check` protocol, the `Evidence` it judges, the
  `Verdict` it gives, and `EngineCheck`, parlay's own (its description, the template of
  its retry message, and the `Traits` the judging reads);
- parlay's checks, each in the module of what it looks at: `call_checks` (the calls
  written), `choice_checks` (what the turn's policy asks), `unsure_checks` (a call the
  model was not sure of), `answer_checks` (a plain answer);
- `defaults`: `DEFAULT_CHECKS`, in the order they are judged, the one list naming them;
- `retry`: the `RetryPolicy` that applies them, and `CallRule`, the short form of a
  check of each call;
- `rules`: every rule by name (`RULES`), and which are switched off;
- `checked_calls`: what is wrong with one call, found for the call checks;
- one module per kind of evidence a check reads: `confidence` (the model's own
  probabilities, held against `min_call_confidence`), `refusal`, `placeholders` and
  `own_words` (parlay's own text coming back), `echo_trim`, `results_answer`.

Write your own check against `Check`, `Evidence` and `Verdict`, imported from here.
"""

from parlay.engine.checks.retry import DEFAULT_CHECKS, CallRule, Check, Evidence, Verdict

__all__ = ["DEFAULT_CHECKS", "CallRule", "Check", "Evidence", "Verdict"]
