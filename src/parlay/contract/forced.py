"""Calls the grammar made: the model's own choice of tool, read from its log-probabilities.

Under a grammar (constrained decoding) a call can only name an offered tool, whatever
the model would have written there. On BFCL's irrelevance questions Qwen2.5-Coder-0.5B
was asked for WHOIS data with only a weather tool offered: at the first token of the
name it gave 95 % to `elite` (the user's API key) and 2 % to `get_current_weather`,
and the grammar wrote `get_current_weather(location="123.123.123.123")`. Asked for a
forecast with only `calculate_sum` offered, it leaned to `weather` (56 %), and the
grammar wrote `calculate_sum(37.8651, 119.5383)`.

So where the backend reports the alternatives it weighed for each token (OpenAI's
`top_logprobs`; llama.cpp and vLLM report them before the grammar filters, which is what
this needs), the engine reads the first token of each call's name: `offered_share` is
the part of the alternatives' probability that begins an offered tool's name. On its
first replies to 150 BFCL questions (bench/results/bfcl-name-shares.md), every right
call Qwen made had a share of 0.95 or more, and 9 of its 21 calls where no tool fit had
less than 0.9; SmolLM2-135M, whose choices are flatter, had right calls down to 0.26.
A backend that reports nothing (`tokens` empty) is not judged.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Collection, Sequence

from attrs import frozen

from parlay.context import ToolCall
from parlay.events import TokenChoice


@frozen
class NameChoice:
    """How a call's name was chosen: the share of the model's alternatives at its first
    token that begin an offered tool's name, and the likeliest alternative."""

    call: ToolCall
    share: float
    leaning: str


def name_choices(
    tokens: Sequence[TokenChoice], calls: Sequence[ToolCall], names: Collection[str]
) -> list[NameChoice]:
    """A `NameChoice` for each call whose name can be found in `tokens` with alternatives.

    Calls are looked for in order, each as the string value of a `tool` or `name` key
    (every action format writes its calls that way under a grammar).
    """
    if not tokens or not calls:
        return []
    text = "".join(token.token for token in tokens)
    starts = list(_starts(tokens))
    found: list[NameChoice] = []
    cursor = 0
    for call in calls:
        match = re.compile(rf'"(?:tool|name)"\s*:\s*"({re.escape(call.name)})"').search(
            text, cursor
        )
        if match is None:
            continue
        cursor = match.end()
        at = match.start(1)
        index = bisect.bisect_right(starts, at) - 1
        token = tokens[index]
        if not token.top:
            continue
        prefix = text[starts[index] : at]
        share = _offered_share(token, prefix, names)
        found.append(NameChoice(call, share, token.top[0][0]))
    return found


def _starts(tokens: Sequence[TokenChoice]) -> list[int]:
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token.token)
    return offsets


def _offered_share(token: TokenChoice, prefix: str, names: Collection[str]) -> float:
    """Of the alternatives' probability, the part that could begin an offered name (the
    alternatives reported, not the whole vocabulary: the rest is unknown)."""
    written = [prefix + name for name in names]
    offered = other = 0.0
    for alternative, logprob in token.top:
        p = math.exp(logprob)
        if any(w.startswith(alternative) or alternative.startswith(w) for w in written):
            offered += p
        else:
            other += p
    total = offered + other
    return offered / total if total > 0 else 1.0
