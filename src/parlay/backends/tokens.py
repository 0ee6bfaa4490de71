"""How many tokens a request takes, for clients that size their context before sending
(Anthropic's `/v1/messages/count_tokens`, which Claude Code asks when it is there).

A backend that can count with the model's own tokenizer, or ask its upstream, has a
`count_tokens(request)` method; for any other the count is an estimate, and says so.
"""

from __future__ import annotations

import enum
import json
from typing import Protocol, runtime_checkable

from attrs import frozen

from parlay.context import AssistantMessage
from parlay.request import ChatRequest

# The estimate: English prose and code run at about four characters a token in the BPE
# vocabularies of current models; JSON and other languages run denser.
CHARS_PER_TOKEN = 4
# What a chat template adds around each message (role markers, separators).
TOKENS_PER_MESSAGE = 4


class CountMethod(enum.Enum):
    """Where a count came from."""

    TOKENIZER = "tokenizer"  # the model's own tokenizer, over the prompt it would see
    UPSTREAM = "upstream"  # the upstream's own count_tokens
    ESTIMATE = "estimate"  # characters / CHARS_PER_TOKEN, plus a little per message


@frozen
class TokenCount:
    tokens: int
    method: CountMethod


@runtime_checkable
class TokenCounter(Protocol):
    """A backend that can count a request's input tokens itself."""

    async def count_tokens(self, request: ChatRequest) -> TokenCount: ...


def request_text(request: ChatRequest) -> str:
    """Everything of a request that reaches the model as text: the messages, the calls'
    arguments and the tools' schemas."""
    parts: list[str] = []
    for message in request.messages:
        parts.append(message.content)
        if isinstance(message, AssistantMessage):
            parts.extend(
                f"{call.name} {json.dumps(call.arguments, ensure_ascii=False)}"
                for call in message.tool_calls
            )
    for tool in request.tools:
        parts.append(f"{tool.name} {tool.description} {json.dumps(tool.parameters)}")
    return "\n".join(parts)


def estimate(request: ChatRequest) -> TokenCount:
    chars = len(request_text(request))
    tokens = -(-chars // CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(request.messages)
    return TokenCount(tokens, CountMethod.ESTIMATE)


async def count_tokens(backend: object, request: ChatRequest) -> TokenCount:
    """The backend's own count where it has one, else the estimate."""
    if isinstance(backend, TokenCounter):
        return await backend.count_tokens(request)
    return estimate(request)
