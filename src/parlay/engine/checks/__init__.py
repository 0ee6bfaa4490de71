"""The checks a reply passes before anyone sees it, and what happens when one fails.

- `retry`: the `Check` protocol, the default checks in the order they are judged, and the
  `RetryPolicy` that applies them;
- `calls`: what is wrong with one call (unknown tool, arguments, made-up values, a
  repeat), and `CallRule`'s home in `rules`, which names every rule;
- one module per kind of evidence a check reads:
  `forced` and `leaning` (the model's own probabilities), `refusal`, `placeholders` and
  `own_words` (parlay's own text coming back), `echo_trim`, `results_answer`.
"""
