"""Anthropic Messages, client side: encode a `ChatRequest`, decode messages and streams."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from parlay.context import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from parlay.errors import BackendProtocolError, BackendStatusError
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
from parlay.reasoning import ThinkSplitter
from parlay.request import ChatRequest, ToolChoice, ToolSpec
from parlay.wire.arguments import parse_arguments
from parlay.wire.images import anthropic_block
from parlay.wire.tool_search import reference_blocks, with_references

DEFAULT_MAX_TOKENS = 1024

STOP_IN: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def encode_tool(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name, "input_schema": spec.parameters}
    if spec.description:
        out["description"] = spec.description
    if spec.deferred:  # Anthropic reads tool search itself: the flag goes as it came
        out["defer_loading"] = True
    return out


def encode_tool_choice(choice: ToolChoice, parallel: bool) -> dict[str, Any]:
    kinds = {"auto": "auto", "required": "any", "none": "none", "tool": "tool"}
    out: dict[str, Any] = {"type": kinds[choice.mode]}
    if choice.mode == "tool":
        out["name"] = choice.name
    if not parallel and choice.mode != "none":
        out["disable_parallel_tool_use"] = True
    return out


def encode_messages(request: ChatRequest) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the alternating user/assistant turns.

    Anthropic wants tool results as blocks of a user turn and turns that alternate, so
    consecutive messages of one role are merged into one turn.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in request.messages:
        if isinstance(message, SystemMessage):
            system.append(message.content)
        elif isinstance(message, UserMessage):
            shown = message.content or not message.images  # no empty text beside an image
            text = [{"type": "text", "text": message.content}] if shown else []
            add("user", text + [anthropic_block(i) for i in message.images])
        elif isinstance(message, AssistantMessage):
            add("assistant", _assistant_blocks(message))
        elif isinstance(message, ToolResult):
            add("user", [_result_block(message)])
    return "\n\n".join(system), turns


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    )
    return blocks


def _result_block(message: ToolResult) -> dict[str, Any]:
    text = (message.error if message.is_error else message.output) or ""
    content: str | list[dict[str, Any]] = text
    if message.images:  # Anthropic takes images inside a tool_result
        blocks = [{"type": "text", "text": text}] if text else []
        content = blocks + [anthropic_block(i) for i in message.images]
    if message.references:  # a tool search's result, as the client sent it
        only_lines = text == with_references("", message.references)
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text}]
        content = (blocks if text and not only_lines else []) + reference_blocks(message.references)
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.call_id,
        "content": content,
    }
    if message.is_error:
        block["is_error"] = True
    return block


def encode_request(request: ChatRequest, *, model: str | None, stream: bool) -> dict[str, Any]:
    system, turns = encode_messages(request)
    options = request.options
    body: dict[str, Any] = {
        "model": request.model or model,
        "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [encode_tool(s) for s in request.tools]
        body["tool_choice"] = encode_tool_choice(request.tool_choice, request.parallel_tool_calls)
    for key in ("temperature", "top_p"):
        value = getattr(options, key)
        if value is not None:
            body[key] = value
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if request.response_format is not None:
        body["output_config"] = {
            "format": {"type": "json_schema", "schema": request.response_format.schema}
        }
    if stream:
        body["stream"] = True
    body.update(request.extra_body)
    return body


def decode_usage(data: Mapping[str, Any] | None) -> Usage | None:
    if not data:
        return None
    return Usage(int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0))


def _reason(raw: str | None, has_calls: bool) -> FinishReason:
    reason = STOP_IN.get(raw or "end_turn", "stop")
    return "tool_calls" if has_calls and reason == "stop" else reason


def decode_response(data: Mapping[str, Any]) -> Iterator[Event]:
    calls = 0
    think = ThinkSplitter()  # a server in front of a local model may send <think> as text
    for block in data.get("content") or []:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield from think.feed(TextDelta(block["text"]))
        elif kind == "thinking" and block.get("thinking"):
            yield ReasoningDelta(block["thinking"])
        elif kind == "tool_use":
            yield from think.finish()
            arguments = block.get("input") or {}
            call = ToolCall(block.get("name") or "", arguments, block.get("id") or f"toolu_{calls}")
            yield ToolCallStart(call.id, call.name, calls)
            yield ToolCallArgsDelta(call.id, call.arguments_json)
            yield ToolCallEnd(call)
            calls += 1
    yield from think.finish()
    yield Finish(
        _reason(data.get("stop_reason"), calls > 0),
        decode_usage(data.get("usage")),
        raw=dict(data),
        model=data.get("model"),
    )


def stream_error(data: Mapping[str, Any]) -> Exception:
    """The exception for an `error` event inside a stream."""
    error = data.get("error") or {}
    kind = error.get("type") or "api_error"
    message = f"the Anthropic stream failed ({kind}): {error.get('message') or data}"
    status = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}.get(kind)
    if status is not None:
        return BackendStatusError(message, status_code=status, body=dict(data))
    return BackendProtocolError(message)


class StreamDecoder:
    """Anthropic stream events in, parlay events out."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._calls = 0
        self._input = 0
        self._output = 0
        self._reason: str | None = None
        self._model: str | None = None
        self._think = ThinkSplitter()
        self.stopped = False

    def feed(self, data: Mapping[str, Any]) -> Iterator[Event]:
        kind = data.get("type")
        if kind == "message_start":
            self._message_start(data)
        elif kind == "content_block_start":
            yield from self._block_start(data)
        elif kind == "content_block_delta":
            yield from self._block_delta(data)
        elif kind == "content_block_stop":
            yield from self._block_stop(data)
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.stopped = True
            yield from self._think.finish()
            yield Finish(
                _reason(self._reason, self._calls > 0),
                Usage(self._input, self._output),
                raw=dict(data),
                model=self._model,
            )
        elif kind == "error":
            raise stream_error(data)

    def _message_start(self, data: Mapping[str, Any]) -> None:
        message = data.get("message") or {}
        self._model = message.get("model")
        usage = message.get("usage") or {}
        self._input = int(usage.get("input_tokens") or 0)
        self._output = int(usage.get("output_tokens") or 0)

    def _block_start(self, data: Mapping[str, Any]) -> Iterator[Event]:
        index = int(data.get("index", len(self._blocks)))
        block = dict(data.get("content_block") or {})
        self._blocks[index] = block
        if block.get("type") == "tool_use":
            block["json"] = []
            yield from self._think.finish()
            yield ToolCallStart(
                block.get("id") or f"toolu_{index}", block.get("name") or "", self._calls
            )
            self._calls += 1
        elif block.get("type") == "text" and block.get("text"):
            yield from self._think.feed(TextDelta(block["text"]))
        elif block.get("type") == "thinking" and block.get("thinking"):
            yield ReasoningDelta(block["thinking"])

    def _block_delta(self, data: Mapping[str, Any]) -> Iterator[Event]:
        block = self._blocks.get(int(data.get("index", -1))) or {}
        delta = data.get("delta") or {}
        if delta.get("type") == "text_delta" and delta.get("text"):
            yield from self._think.feed(TextDelta(delta["text"]))
        elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
            yield ReasoningDelta(delta["thinking"])
        elif delta.get("type") == "input_json_delta" and "json" in block:
            fragment = delta.get("partial_json") or ""
            if fragment:
                block["json"].append(fragment)
                yield ToolCallArgsDelta(block.get("id") or "", fragment)

    def _block_stop(self, data: Mapping[str, Any]) -> Iterator[Event]:
        block = self._blocks.get(int(data.get("index", -1))) or {}
        if "json" in block:
            text = "".join(block["json"])
            arguments, _ = parse_arguments(text) if text else (block.get("input") or {}, None)
            yield ToolCallEnd(ToolCall(block.get("name") or "", arguments, block.get("id") or ""))

    def _message_delta(self, data: Mapping[str, Any]) -> None:
        delta = data.get("delta") or {}
        self._reason = delta.get("stop_reason") or self._reason
        usage = data.get("usage") or {}
        if usage.get("output_tokens") is not None:
            self._output = int(usage["output_tokens"])
        if usage.get("input_tokens"):
            self._input = int(usage["input_tokens"])


def decode_sse_data(text: str, where: str) -> Mapping[str, Any]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BackendProtocolError(
            f"{where} sent a stream event that is not JSON: {text[:200]!r}"
        ) from exc
    if not isinstance(data, dict):
        raise BackendProtocolError(f"{where} sent a stream event that is not an object")
    return data
