"""How sure the model was of a call: the evidence `min_call_confidence` is held against.

Where the backend reports the alternatives it weighed per token (before a grammar filters
them), two points of a reply are read:

- its kind, in the json and typed formats, which write it first (`final`, or a call):
  the share of the weight on answering (`answer_share`, `Diagnostics.answer_share`);
- each token of a call's name: the share of the alternatives that go on to an offered
  tool's name (`name_choices`). Under a grammar a call can only name an offered tool,
  whatever the model would have written there; a call is judged by its least sure token.

A backend that reports nothing is not judged. How the name shares of right and wrong
calls differ: bench/results/bfcl-name-shares.md; the knob's values and their cost:
bench/results/bfcl-knob.md.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Collection, Sequence
from itertools import accumulate

from attrs import frozen

from parlay.context import ToolCall
from parlay.engine.contract.pieces import NAME_PLACEHOLDER, ActionFormat
from parlay.events import TokenChoice

# A character that can go on a tool's name (`weathers` is another name than `weather`).
_NAME_CHAR = re.compile(r"[\w.\-]")
# Where a call's name begins, in every action format under a grammar (typed: `tool_name`).
_NAME_KEY = r'"(?:tool|name|tool_name)"\s*:\s*"'


@frozen
class NameChoice:
    """How a call's name was chosen, at the token where the model was least sure of it:
    the share of its alternatives there that continue an offered tool's name, the
    likeliest alternative, and the part of the name written before that token."""

    call: ToolCall
    share: float
    leaning: str
    before: str = ""

    def describe(self) -> str:
        """One line for diagnostics: the call, where in its name, the share, the leaning."""
        where = f"after {self.before!r}" if self.before else "at its first token"
        return (
            f"{self.call.name}: {where}, {self.share:.0%} of the model's choices went on "
            f"to an offered tool (it leaned to {self.leaning!r})"
        )


def name_choices(
    tokens: Sequence[TokenChoice], calls: Sequence[ToolCall], names: Collection[str]
) -> list[NameChoice]:
    """A `NameChoice` for each call whose name is found in `tokens` with alternatives:
    in order, each as the string value of a key every action format writes names under."""
    text = "".join(token.token for token in tokens)
    starts = list(accumulate((len(token.token) for token in tokens), initial=0))
    found: list[NameChoice] = []
    cursor = 0
    for call in calls:
        match = re.compile(rf'{_NAME_KEY}({re.escape(call.name)})"').search(text, cursor)
        if match is None:
            continue
        cursor, (begin, end) = match.end(), match.span(1)
        least: NameChoice | None = None
        for index in range(bisect.bisect_right(starts, begin) - 1, bisect.bisect_left(starts, end)):
            token, start = tokens[index], starts[index]
            # The first token may carry the quote before the name (`opening`).
            share = _share(token, text[begin:start], text[start:begin], names)
            if share is not None and (least is None or share < least.share):
                least = NameChoice(call, share, token.top[0][0], text[begin:start])
        if least is not None:
            found.append(least)
    return found


def _share(token: TokenChoice, before: str, opening: str, names: Collection[str]) -> float | None:
    """Of the alternatives' probability at a token of a name (`before` written), the part
    that could go on to write an offered name (the alternatives reported, not the whole
    vocabulary: the rest is unknown); None where none is reported. The alternatives that
    go on to the format's placeholder name, which a model copies when it means to call
    but is unsure which tool, are left out."""
    if not token.top:
        return None

    def to_write(candidates: Collection[str]) -> list[str]:
        return [opening + c[len(before) :] for c in candidates if c.startswith(before)]

    offered, neutral = to_write(names), to_write((NAME_PLACEHOLDER,))
    weight = other = 0.0
    for alternative, logprob in token.top:
        if any(_continues(alternative, c) for c in offered):
            weight += math.exp(logprob)
        elif not any(_continues(alternative, n) for n in neutral):
            other += math.exp(logprob)
    total = weight + other
    return weight / total if total > 0 else 1.0


def _continues(alternative: str, continuation: str) -> bool:
    """Whether `alternative` may go on to write `continuation`; one that runs past it
    counts only if the name ends there (`weather"` continues `weather`, `weathers` not)."""
    if continuation.startswith(alternative):
        return True
    end = len(continuation)
    return alternative.startswith(continuation) and not _NAME_CHAR.match(alternative, end)


# Per format: where the reply's kind is written, and the words for calling (`final`
# answers). The fenced format writes no kind.
_KIND = {
    "json": (re.compile(r'^\s*\{\s*"'), ("tool", "actions")),
    "typed": (re.compile(r'^\s*\{\s*"type"\s*:\s*"'), ("tool_call", "tool_calls")),
}
# The knob's default: the rule's choice for Qwen on the development benchmark's tune half.
DEFAULT_CALL_CONFIDENCE = 0.7
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
