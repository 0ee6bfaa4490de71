"""The one stream of events between where model output comes from and where it goes.

Every backend, native or prompted, yields these; sessions and the proxy's wire encoders
consume them and never learn how the calls were produced.
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.diagnostics import Diagnostics

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


@frozen
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@frozen
class TokenChoice:
    """One generated token, its log-probability, and the alternatives the model weighed
    for that position (`top`: token and log-probability, likeliest first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@frozen
class TextDelta:
    """Visible text, in the order the model produced it."""

    text: str


@frozen
class ScoredTextDelta(TextDelta):
    """Text with its tokens and the alternatives the model weighed for each: what a
    backend yields when the request asked for them (`GenerationOptions.top_logprobs`)
    and the server reported them. Everything that reads `TextDelta` reads it as one."""

    tokens: tuple[TokenChoice, ...] = field(default=(), repr=False)


@frozen
class ToolCallStart:
    """A tool call begins: its id and name are known, its arguments are not yet."""

    id: str
    name: str
    index: int


@frozen
class ToolCallArgsDelta:
    """A fragment of a call's arguments as JSON text; the fragments concatenate to the JSON."""

    id: str
    delta: str


@frozen
class ToolCallEnd:
    """A call is complete; `call.arguments` is the parsed argument object."""

    call: ToolCall

    @property
    def id(self) -> str:
        return self.call.id


@frozen
class Finish:
    """The last event of every stream."""

    reason: FinishReason
    usage: Usage | None = None
    raw: Any = field(default=None, eq=False, repr=False)
    diagnostics: Diagnostics | None = None
    model: str | None = None


Event = TextDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd | Finish
