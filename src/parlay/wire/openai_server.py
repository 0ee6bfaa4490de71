"""OpenAI chat completions, server side: decode requests, encode responses and SSE streams.

The proxy reads what OpenAI clients send into a `ChatRequest` and writes parlay's events
back out as `chat.completion` objects or `chat.completion.chunk` streams.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Sequence
from itertools import islice
from typing import Any

from parlay.events import (
    Event,
    Finish,
    FinishReason,
    ReasoningDelta,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.wire.openai_client import assistant_json
from parlay.wire.openai_request import (
    OpenAIRequest,
    decode_messages,
    decode_request,
    decode_response_format,
    decode_tool_choice,
    decode_tools,
    decode_top_logprobs,
)
from parlay.wire.reply import Reply

# The decoders live in parlay.wire.openai_request; this module is the codec's one name.
__all__ = [
    "DONE",
    "ERROR_TYPES",
    "FINISH_OUT",
    "OpenAIRequest",
    "StreamEncoder",
    "decode_messages",
    "decode_request",
    "decode_response_format",
    "decode_tool_choice",
    "decode_tools",
    "decode_top_logprobs",
    "encode_error",
    "encode_logprobs",
    "encode_response",
    "encode_usage",
    "new_completion_id",
]

FINISH_OUT: dict[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    # OpenAI has no "error" reason; the error itself travels as an error object.
    "error": "stop",
}


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


# -- encoding ------------------------------------------------------------------------------


def encode_usage(reply_usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": reply_usage.prompt_tokens,
        "completion_tokens": reply_usage.completion_tokens,
        "total_tokens": reply_usage.total_tokens,
    }


def _alternative(token: str, logprob: float, exact: bytes) -> dict[str, Any]:
    # `bytes` are the token's own, not its text's UTF-8: for a token holding part of a
    # multi-byte character the text is a stand-in ("�", ""), and clients that rebuild the
    # text join the bytes, as OpenAI documents.
    return {"token": token, "logprob": logprob, "bytes": list(exact)}


def _finite(token: TokenChoice) -> bool:
    return math.isfinite(token.logprob) and all(math.isfinite(lp) for _, lp in token.top)


def encode_logprobs(tokens: Sequence[TokenChoice], top_logprobs: int) -> dict[str, Any] | None:
    """A choice's `logprobs` object for scored tokens, with at most `top_logprobs`
    alternatives each (an upstream may send more than asked); None (null) when there are
    no tokens.

    JSON has no NaN or infinity: a token whose number the upstream did not send (decoded
    as NaN) or sent as infinite leaves the whole object null rather than invalid JSON.
    """
    if not tokens or not all(map(_finite, tokens)):
        return None
    content = [
        {
            **_alternative(t.token, t.logprob, t.exact_bytes()),
            "top_logprobs": [
                _alternative(*alt) for alt in islice(t.top_with_bytes(), top_logprobs)
            ],
        }
        for t in tokens
    ]
    return {"content": content, "refusal": None}


def encode_response(
    reply: Reply,
    *,
    model: str,
    id: str | None = None,
    created: int | None = None,
    top_logprobs: int | None = None,
) -> dict[str, Any]:
    """A `chat.completion` object for a whole reply.

    `top_logprobs`: the alternatives per token the client asked for (None: it asked for
    no log-probabilities, and `logprobs` stays null). They cover the text that came scored
    (`ScoredTextDelta`); text the engine made itself (the prompted engine's parser, when
    tools are in play) has none, so a reply of such text gets null. A reply mixing both
    gets the scored tokens only: those numbers are true for the tokens they name, and the
    missing ones cannot be made up, so a client joining the tokens sees the gap.
    """
    message = assistant_json(reply.text, reply.calls)
    if reply.reasoning:  # the field llama.cpp, vLLM and DeepSeek use; others ignore it
        message["reasoning_content"] = reply.reasoning
    reason = FINISH_OUT[reply.finish.reason]
    if reply.calls and reason == "stop":
        reason = "tool_calls"
    return {
        "id": id or new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reason,
                "logprobs": (
                    None if top_logprobs is None else encode_logprobs(reply.tokens, top_logprobs)
                ),
            }
        ],
        "usage": encode_usage(reply.usage),
    }


class StreamEncoder:
    """parlay events in, `chat.completion.chunk` objects out (then `[DONE]`).

    `start()` gives the role chunk; `feed(event)` the chunks for one event; the `Finish`
    event gives the finish chunk and, when asked for, the usage chunk. With `top_logprobs`
    (as for `encode_response`), each text chunk carries the scored tokens of its own delta:
    null for a delta that came without them, as for whole replies.
    """

    def __init__(
        self,
        *,
        model: str,
        include_usage: bool = False,
        top_logprobs: int | None = None,
        id: str | None = None,
        created: int | None = None,
    ) -> None:
        self.id = id or new_completion_id()
        self.created = int(time.time()) if created is None else created
        self.model = model
        self.include_usage = include_usage
        self.top_logprobs = top_logprobs
        self._index: dict[str, int] = {}
        self._sent_args: dict[str, bool] = {}
        self._saw_calls = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    def start(self) -> list[dict[str, Any]]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def feed(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, TextDelta):
            return self._text(event)
        if isinstance(event, ReasoningDelta):
            return [self._chunk({"reasoning_content": event.text})] if event.text else []
        if isinstance(event, ToolCallStart):
            return [self._start(event)]
        if isinstance(event, ToolCallArgsDelta):
            if not event.delta:
                return []
            self._sent_args[event.id] = True
            return [self._args_chunk(event.id, event.delta)]
        if isinstance(event, ToolCallEnd):
            return self._end(event)
        if isinstance(event, Finish):
            return self._finish(event)
        return []

    def _text(self, event: TextDelta) -> list[dict[str, Any]]:
        if not event.text:
            return []
        chunk = self._chunk({"content": event.text})
        if self.top_logprobs is not None and isinstance(event, ScoredTextDelta):
            logprobs = encode_logprobs(event.tokens, self.top_logprobs)
            chunk["choices"][0]["logprobs"] = logprobs
        return [chunk]

    def _start(self, event: ToolCallStart) -> dict[str, Any]:
        self._saw_calls = True
        index = self._index.setdefault(event.id, len(self._index))
        self._sent_args[event.id] = False
        call = {
            "index": index,
            "id": event.id,
            "type": "function",
            "function": {"name": event.name, "arguments": ""},
        }
        return self._chunk({"tool_calls": [call]})

    def _end(self, event: ToolCallEnd) -> list[dict[str, Any]]:
        if event.id not in self._index:
            # An end without a start: announce the whole call at once.
            out = self.feed(ToolCallStart(event.id, event.call.name, len(self._index)))
            return [*out, self._args_chunk(event.id, event.call.arguments_json)]
        if not self._sent_args.get(event.id):
            # No fragment streamed: send the arguments whole so clients get valid JSON.
            self._sent_args[event.id] = True
            return [self._args_chunk(event.id, event.call.arguments_json)]
        return []

    def _finish(self, event: Finish) -> list[dict[str, Any]]:
        reason = FINISH_OUT[event.reason]
        if self._saw_calls and reason == "stop":
            reason = "tool_calls"
        out = [self._chunk({}, reason)]
        if self.include_usage:
            chunk = self._chunk({})
            chunk["choices"] = []
            chunk["usage"] = encode_usage(event.usage or Usage())
            out.append(chunk)
        return out

    def _args_chunk(self, call_id: str, text: str) -> dict[str, Any]:
        index = self._index[call_id]
        return self._chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})


DONE = "[DONE]"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    502: "upstream_error",
    504: "timeout_error",
}


def encode_error(status: int, message: str, *, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: `{"error": {"message", "type", "param", "code"}}`."""
    return {
        "error": {
            "message": message,
            "type": ERROR_TYPES.get(
                status, "invalid_request_error" if status < 500 else "server_error"
            ),
            "param": None,
            "code": code,
        }
    }
