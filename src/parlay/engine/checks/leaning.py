"""How sure the model was of calling, where it chose between that and answering in words.

Under a grammar a reply says what it is in its first word: `{"final": ...}` or
`{"tool": ...}` / `{"actions": [...]}` in the json format, `{"type": "final"}` or
`{"type": "tool_call"}` in the typed one. Where the backend reports the alternatives the
model weighed for each token (before the grammar filtered them, as llama.cpp does), the
token that writes that word says how sure the model was: the share of the weight that
went to answering, out of what went to answering or calling. It is recorded
(`Diagnostics.answer_share`, first attempt only), and under `auto` the check
`unsure_call` asks a first reply that calls for an answer in words when the model left
calling less than `PromptedBackend(min_call_confidence=...)`: the one knob that trades
calls against abstentions (`parlay.engine.calibration` holds its defaults).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence

from parlay.engine.contract.pieces import ActionFormat
from parlay.events import TokenChoice

# Per format: where the reply's kind is written, the word for answering, the words for
# calling. Formats that write no such word (fenced, command) have no entry.
_KIND = {
    "json": (re.compile(r'^\s*\{\s*"'), "final", ("tool", "actions")),
    "typed": (re.compile(r'^\s*\{\s*"type"\s*:\s*"'), "final", ("tool_call", "tool_calls")),
}
# The knob's default (`PromptedBackend(min_call_confidence=...)`), one value for every
# model: of the thresholds tried on the development benchmark's tune halves, the one whose
# worse balanced score over the two models is the best (`python -m bench.bfcl.knob`,
# bench/results/bfcl-knob.md).
DEFAULT_CALL_CONFIDENCE = 0.8
# The kind word is written within the reply's first characters, or not at all.
_LOOK = 64


def answer_share(tokens: Sequence[TokenChoice], action_format: ActionFormat) -> float | None:
    """The share of the model's weight on answering at the token that wrote the reply's
    kind; None when the format writes no kind, the reply does not start with one, or that
    token carries no alternatives."""
    found = _KIND.get(action_format)
    if found is None or not tokens:
        return None
    opening, answer, calls = found
    starts: list[int] = []
    text = ""
    for token in tokens:
        if len(text) > _LOOK:
            break
        starts.append(len(text))
        text += token.token
    match = opening.match(text)
    if match is None:
        return None
    begin = match.end()
    index = bisect.bisect_right(starts, begin) - 1
    token = tokens[index]
    if not token.top:
        return None
    written = text[starts[index] : begin]  # what the token writes before the word
    return _share(token, written + answer, [written + word for word in calls])


def _share(token: TokenChoice, answer: str, calls: Sequence[str]) -> float | None:
    answering = calling = 0.0
    for alternative, logprob in token.top:
        to_answer = _starts(alternative, answer)
        to_call = any(_starts(alternative, word) for word in calls)
        if to_answer and not to_call:
            answering += math.exp(logprob)
        elif to_call and not to_answer:
            calling += math.exp(logprob)
    total = answering + calling
    return answering / total if total > 0 else None


def _starts(alternative: str, word: str) -> bool:
    """Whether writing `alternative` here can go on to `word` (or writes it whole)."""
    return word.startswith(alternative) or alternative.startswith(word)


def leans_to_words(share: float | None, threshold: float) -> bool:
    """Whether a reply with this share of weight on answering reaches `threshold`."""
    return share is not None and share >= threshold
