"""Calls the grammar made: the model's own choice of tool, read from its log-probabilities.

Under a grammar a call can only name an offered tool, whatever the model would have
written there. Where the backend reports the alternatives it weighed per token (before
the grammar filters them), each token of a call's name is read: the share of the
alternatives that go on to an offered tool's name. A call is judged by its least sure
token against `min_offered_share`; a backend that reports nothing is not judged. How
the shares of right and wrong calls differ: bench/results/bfcl-name-shares.md.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Collection, Sequence

from attrs import frozen

from parlay.context import ToolCall
from parlay.engine.contract.pieces import NAME_PLACEHOLDER
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
    """A `NameChoice` for each call whose name can be found in `tokens` with alternatives.

    Calls are looked for in order, each as the string value of a key every action
    format writes its calls' names under: `tool`, `name`, or the typed format's
    `tool_name`.
    """
    if not tokens or not calls:
        return []
    text = "".join(token.token for token in tokens)
    starts = _starts(tokens)
    found: list[NameChoice] = []
    cursor = 0
    for call in calls:
        match = re.compile(rf'{_NAME_KEY}({re.escape(call.name)})"').search(text, cursor)
        if match is None:
            continue
        cursor = match.end()
        choice = _least_sure(tokens, starts, text, match.start(1), match.end(1), call, names)
        if choice is not None:
            found.append(choice)
    return found


def _starts(tokens: Sequence[TokenChoice]) -> list[int]:
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token.token)
    return offsets


def _least_sure(
    tokens: Sequence[TokenChoice],
    starts: list[int],
    text: str,
    begin: int,
    end: int,
    call: ToolCall,
    names: Collection[str],
) -> NameChoice | None:
    """The `NameChoice` at the name's token (between `begin` and `end` of `text`) with the
    smallest share; None when no token of the name carries alternatives."""
    least: NameChoice | None = None
    index = bisect.bisect_right(starts, begin) - 1
    while index < len(tokens) and starts[index] < end:
        token, start = tokens[index], starts[index]
        index += 1
        if not token.top:
            continue
        before = text[begin:start] if start > begin else ""
        opening = text[start:begin]  # the first token may carry the opening quote
        share = _continuing_share(
            token,
            _still_to_write(names, before, opening),
            _still_to_write((NAME_PLACEHOLDER,), before, opening),
        )
        if least is None or share < least.share:
            least = NameChoice(call, share, token.top[0][0], before)
    return least


def _still_to_write(candidates: Collection[str], before: str, opening: str) -> list[str]:
    """What each candidate that begins with `before` has left to write, as a token that
    also carries `opening` (the quote before the name) would begin it."""
    return [opening + c[len(before) :] for c in candidates if c.startswith(before)]


def _continuing_share(
    token: TokenChoice, continuations: Sequence[str], neutral: Sequence[str]
) -> float:
    """Of the alternatives' probability, the part that could go on to write one of
    `continuations` (the alternatives reported, not the whole vocabulary: the rest is
    unknown). An alternative that runs past a name counts only if the name ends there
    (`weather"` continues `weather`; `weathers` does not). Alternatives that go on to a
    `neutral` text are left out: the format's placeholder name, which a model copies
    when it means to call but is unsure which tool."""
    offered = other = 0.0
    for alternative, logprob in token.top:
        p = math.exp(logprob)
        if any(_continues(alternative, c) for c in continuations):
            offered += p
        elif not any(_continues(alternative, n) for n in neutral):
            other += p
    total = offered + other
    return offered / total if total > 0 else 1.0


def _continues(alternative: str, continuation: str) -> bool:
    if continuation.startswith(alternative):
        return True
    return alternative.startswith(continuation) and not _NAME_CHAR.match(
        alternative, len(continuation)
    )
