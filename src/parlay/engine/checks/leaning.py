"""How much the model leaned to answering in words, where it chose between that and a call.

Under a grammar a reply says what it is in its first word: `{"final": ...}` or
`{"tool": ...}` / `{"actions": [...]}` in the json format, `{"type": "final"}` or
`{"type": "tool_call"}` in the typed one. Where the backend reports the alternatives the
model weighed for each token (before the grammar filtered them, as llama.cpp does), the
token that writes that word says how sure the model was: the share of the weight that
went to answering, out of what went to answering or calling. It is recorded
(`Diagnostics.answer_share`, first attempt only), and under `auto` the opt-in rule
`leaned_to_words` takes a first reply that calls while leaning this much to answering
for a model unsure that any tool fits, and asks for an answer in words instead.

Its threshold is the typed format's only (`LEAN_TO_WORDS`), chosen on the development
benchmark's tune half (Qwen2.5-Coder-0.5B, stored first replies, the balanced score
over a grid of thresholds); asked for real it gained the same on both halves, +3.0
points, within its interval on each (bench/bfcl/notes.md, stop 27), so it is opt-in.
In the json format the same threshold took a call from 62 of 251 first replies and
lost more right calls than it won abstentions: its kind word weighs differently.
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
# The share of the weight on answering at which `leaned_to_words` takes a first reply's
# calls for a model unsure that any tool fits, per format (a format not here: never).
LEAN_TO_WORDS: dict[str, float] = {"typed": 0.3}
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


def leans_to_words(share: float | None, action_format: ActionFormat) -> bool:
    """Whether a reply with this lean to answering, in this format, leans to words."""
    threshold = LEAN_TO_WORDS.get(action_format)
    return share is not None and threshold is not None and share >= threshold
