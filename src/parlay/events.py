"""The one stream of events between where model output comes from and where it goes.

Every backend, native or prompted, yields these; sessions and the proxy's wire encoders
consume them and never learn how the calls were produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from attrs import Attribute, field, frozen
from attrs.validators import instance_of

from parlay.diagnostics import Diagnostics
from parlay.messages import ToolCall

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


# The bytes type by a second name: inside `TokenChoice`, `bytes` names a field.
TokenBytes = bytes


def _one_per_alternative(
    choice: TokenChoice, attribute: Attribute[Any], top_bytes: tuple[TokenBytes | None, ...]
) -> None:
    if top_bytes and len(top_bytes) != len(choice.top):
        raise ValueError(
            f"`top_bytes` has {len(top_bytes)} entries for {len(choice.top)} alternatives in"
            " `top`: give one per alternative (None where its text says its bytes), or none"
        )


@frozen
class TokenChoice:
    """One generated token, its log-probability, and the alternatives the model weighed
    for that position (`top`: token and log-probability, likeliest first).

    Byte-level tokenizers split a character such as 你 or 🌟 over several tokens, and a
    token holding part of one has no text of its own: servers send a stand-in ("�" or ""
    from llama.cpp, "bytes:\\xe4" from OpenAI) with the exact bytes beside it. `bytes`
    keeps them when the text cannot say them; None means the text's UTF-8 is the bytes.
    `top_bytes` does the same for `top`, one entry per alternative, or () when every
    alternative's text says its bytes. It is a field of its own rather than a third item
    in `top` because readers unpack `top` as (token, log-probability) pairs.
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    bytes: TokenBytes | None = None
    top_bytes: tuple[TokenBytes | None, ...] = field(default=(), validator=_one_per_alternative)

    def exact_bytes(self) -> TokenBytes:
        """The token's bytes: the kept ones, else its text's UTF-8."""
        return self.token.encode() if self.bytes is None else self.bytes

    def top_with_bytes(self) -> Iterator[tuple[str, float, TokenBytes]]:
        """`top` as (token, log-probability, exact bytes), likeliest first."""
        kept = self.top_bytes or (None,) * len(self.top)
        for (token, logprob), exact in zip(self.top, kept, strict=True):
            yield token, logprob, token.encode() if exact is None else exact


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
class ReasoningDelta:
    """The model's reasoning (a `<think>` block, an upstream's `reasoning_content` or
    `thinking`): shown as the protocol's reasoning, never as answer text, never parsed
    for calls. Not a `TextDelta`, so whatever reads the answer never reads it."""

    text: str


@frozen
class ToolCallStart:
    """A tool call begins: its id and name are known, its arguments are not yet."""

    # Checked: a server may send a number for a name, which no client could call.
    id: str = field(validator=instance_of(str))
    name: str = field(validator=instance_of(str))
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


Event = TextDelta | ReasoningDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd | Finish
