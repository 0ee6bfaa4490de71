"""Anthropic Messages, server side: decode requests, encode messages and SSE streams."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from parlay.events import (
    Event,
    Finish,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.wire.anthropic_request import (
    AnthropicRequest,
    decode_messages,
    decode_output_format,
    decode_request,
    decode_system,
    decode_tool_choice,
    decode_tools,
)
from parlay.wire.reply import Reply

# The decoders live in parlay.wire.anthropic_request; this module is the codec's one name.
__all__ = [
    "ERROR_TYPES",
    "SSE",
    "STOP_OUT",
    "AnthropicRequest",
    "StreamEncoder",
    "decode_messages",
    "decode_output_format",
    "decode_request",
    "decode_system",
    "decode_tool_choice",
    "decode_tools",
    "encode_error",
    "encode_response",
    "new_message_id",
    "shows_thinking",
]

STOP_OUT: dict[FinishReason, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
}


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:24]


# -- encoding ------------------------------------------------------------------------------


def _stop_reason(reason: FinishReason, has_calls: bool) -> str:
    out = STOP_OUT[reason]
    return "tool_use" if has_calls and out == "end_turn" else out


def shows_thinking(body: Any) -> bool:
    """Whether the request asked to see thinking: `thinking` enabled or adaptive, its
    `display` not "omitted". Reasoning not asked for is left out, as Anthropic does."""
    thinking = body.get("thinking") if isinstance(body, Mapping) else None
    if not isinstance(thinking, Mapping) or thinking.get("type") == "disabled":
        return False
    return thinking.get("display") != "omitted"


def _thinking_block(text: str) -> dict[str, Any]:
    # No signature a proxy could give would be true: it stays empty, and parlay reads
    # thinking sent back with or without one.
    return {"type": "thinking", "thinking": text, "signature": ""}


def encode_response(
    reply: Reply, *, model: str, id: str | None = None, thinking: bool = True
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning and thinking:
        content.append(_thinking_block(reply.reasoning))
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    usage = reply.usage
    return {
        "id": id or new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(reply.finish.reason, bool(reply.calls)),
        "stop_sequence": None,
        "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens},
    }


SSE = tuple[str, dict[str, Any]]  # (event name, data)


class StreamEncoder:
    """parlay events in, Anthropic stream events out as (name, data) pairs."""

    def __init__(self, *, model: str, id: str | None = None, thinking: bool = True) -> None:
        self.id = id or new_message_id()
        self.model = model
        self.thinking = thinking  # whether reasoning goes out as thinking blocks
        # Index of the last block started: every block gets the next, never one reused.
        self._block = -1
        self._open: str | None = None  # "text", "thinking" or a call id
        self._sent_args: dict[str, bool] = {}
        self._saw_calls = False

    def start(self) -> list[SSE]:
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [
            ("message_start", {"type": "message_start", "message": message}),
            ("ping", {"type": "ping"}),
        ]

    def _close(self) -> list[SSE]:
        if self._open is None:
            return []
        self._open = None
        return [("content_block_stop", {"type": "content_block_stop", "index": self._block})]

    def _begin(self, block: dict[str, Any], key: str) -> list[SSE]:
        out = self._close()
        self._block += 1
        self._open = key
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": self._block, "content_block": block},
            )
        )
        return out

    def _delta(self, delta: dict[str, Any]) -> SSE:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": self._block, "delta": delta},
        )

    def _thinking(self, event: ReasoningDelta) -> list[SSE]:
        if not event.text or not self.thinking:
            return []
        opened = self._open == "thinking"
        out = [] if opened else self._begin(_thinking_block(""), "thinking")
        out.append(self._delta({"type": "thinking_delta", "thinking": event.text}))
        return out

    def _text(self, event: TextDelta) -> list[SSE]:
        if not event.text:
            return []
        out = [] if self._open == "text" else self._begin({"type": "text", "text": ""}, "text")
        out.append(self._delta({"type": "text_delta", "text": event.text}))
        return out

    def feed(self, event: Event) -> list[SSE]:
        if isinstance(event, ReasoningDelta):
            return self._thinking(event)
        if isinstance(event, TextDelta):
            return self._text(event)
        if isinstance(event, ToolCallStart):
            self._saw_calls = True
            self._sent_args[event.id] = False
            block = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            return self._begin(block, event.id)
        if isinstance(event, ToolCallArgsDelta):
            if not event.delta or self._open != event.id:
                # Anthropic blocks do not interleave; a fragment for a closed call is dropped
                # and the whole arguments go out at its end instead.
                return []
            self._sent_args[event.id] = True
            return [self._delta({"type": "input_json_delta", "partial_json": event.delta})]
        if isinstance(event, ToolCallEnd):
            out = []
            if self._open != event.id:
                self._saw_calls = True
                block = {"type": "tool_use", "id": event.id, "name": event.call.name, "input": {}}
                out.extend(self._begin(block, event.id))
                self._sent_args[event.id] = False
            if not self._sent_args.get(event.id):
                out.append(
                    self._delta(
                        {"type": "input_json_delta", "partial_json": event.call.arguments_json}
                    )
                )
            out.extend(self._close())
            return out
        if isinstance(event, Finish):
            usage = event.usage or Usage()
            out = self._close()
            out.append(
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {
                            "stop_reason": _stop_reason(event.reason, self._saw_calls),
                            "stop_sequence": None,
                        },
                        "usage": {
                            "input_tokens": usage.prompt_tokens,
                            "output_tokens": usage.completion_tokens,
                        },
                    },
                )
            )
            out.append(("message_stop", {"type": "message_stop"}))
            return out
        return []


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def encode_error(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error object: `{"type": "error", "error": {"type", "message"}}`."""
    return {
        "type": "error",
        "error": {
            "type": ERROR_TYPES.get(
                status, "invalid_request_error" if status < 500 else "api_error"
            ),
            "message": message,
        },
    }
