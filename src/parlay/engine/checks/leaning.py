"""How sure the model was of calling, where it chose between that and answering in words.

In the json and typed formats a reply writes its kind first (`final`, or a call). Where
the backend reports the alternatives weighed at that token, their share on answering is
recorded (`Diagnostics.answer_share`), and under `auto` the `unsure_call` check asks a
first reply that calls for words when calling got less than `min_call_confidence`.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence

from parlay.engine.contract.pieces import ActionFormat
from parlay.events import TokenChoice

# Per format: where the reply's kind is written, and the words for calling (`final`
# answers). The fenced format writes no kind.
_KIND = {
    "json": (re.compile(r'^\s*\{\s*"'), ("tool", "actions")),
    "typed": (re.compile(r'^\s*\{\s*"type"\s*:\s*"'), ("tool_call", "tool_calls")),
}
# The knob's default, chosen on the development benchmark; every threshold's score on
# both models: bench/results/bfcl-knob.md.
DEFAULT_CALL_CONFIDENCE = 0.75
# The kind word is written within the reply's first characters, or not at all.
_LOOK = 64


def answer_share(tokens: Sequence[TokenChoice], action_format: ActionFormat) -> float | None:
    """The share of the model's weight on answering at the token that wrote the reply's
    kind; None when the format writes no kind, the reply does not start with one, or that
    token carries no alternatives."""
    found = _KIND.get(action_format)
    if found is None or not tokens:
        return None
    opening, calls = found
    starts: list[int] = []
    text = ""
    for token in tokens:
        if len(text) > _LOOK:
            break
        starts.append(len(text))
        text += token.token
    if (match := opening.match(text)) is None:
        return None
    index = bisect.bisect_right(starts, match.end()) - 1
    written = text[starts[index] : match.end()]  # what the token writes before the word
    answering = calling = 0.0
    for alternative, logprob in tokens[index].top:
        to_answer = _may_write(alternative, written + "final")
        to_call = any(_may_write(alternative, written + word) for word in calls)
        if to_answer and not to_call:
            answering += math.exp(logprob)
        elif to_call and not to_answer:
            calling += math.exp(logprob)
    total = answering + calling
    return answering / total if total > 0 else None


def _may_write(alternative: str, word: str) -> bool:
    """Whether writing `alternative` here can go on to `word` (or writes it whole)."""
    return word.startswith(alternative) or alternative.startswith(word)


def leans_to_words(share: float | None, threshold: float) -> bool:
    """Whether a reply with this share of weight on answering reaches `threshold`."""
    return share is not None and share >= threshold
