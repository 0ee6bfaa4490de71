"""OpenAI chat completions, client side: encode a `ChatRequest`, decode responses and streams."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
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
from parlay.reasoning import ThinkSplitter
from parlay.request import ChatRequest, GenerationOptions, ToolChoice, ToolSpec
from parlay.wire.arguments import parse_arguments
from parlay.wire.images import chat_part

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


# What stands before the images of tool results, in the user message that carries them.
RESULT_IMAGES_NOTE = "The images the tool results above returned:"


def encode_message(message: Message) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        if message.images:
            parts = [{"type": "text", "text": message.content}] if message.content else []
            return {"role": "user", "content": parts + [chat_part(i) for i in message.images]}
        return {"role": "user", "content": message.content}
    if isinstance(message, AssistantMessage):
        return assistant_json(message.content, message.tool_calls)
    if isinstance(message, ToolResult):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
    raise TypeError(f"not a message: {message!r}")


def encode_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages in chat-completions form. A `tool` message holds text only (OpenAI
    refuses an image there), so the images of a run of tool results go in one user
    message right after the run, as other gateways do: a user message between two tool
    messages would part results from the calls they answer."""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, ToolResult) and pending:
            out.append(_result_images(pending))
            pending = []
        out.append(encode_message(message))
        if isinstance(message, ToolResult):
            pending += [chat_part(i) for i in message.images]
    if pending:
        out.append(_result_images(pending))
    return out


def _result_images(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": RESULT_IMAGES_NOTE}, *parts]}


def encode_tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}


def encode_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def encode_request(request: ChatRequest, *, model: str | None, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": encode_messages(request.messages)}
    chosen = request.model or model
    if chosen:
        body["model"] = chosen
    # A chat upstream has no deferred tools: it is sent those shown (the history
    # references the rest as the client's own search finds them), never all in full.
    if tools := request.shown_tools():
        body["tools"] = [encode_tool(spec) for spec in tools]
        body["tool_choice"] = encode_tool_choice(request.tool_choice)
        if not request.parallel_tool_calls:
            body["parallel_tool_calls"] = False
    if request.response_format is not None:
        fmt = request.response_format
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": fmt.schema, "strict": fmt.strict},
        }
    body.update(_encode_options(request.options))
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(request.extra_body)
    return body


def _encode_options(options: GenerationOptions) -> dict[str, Any]:
    """The generation options a request sets, in the body's order."""
    body: dict[str, Any] = {}
    for key in (
        "temperature",
        "top_p",
        "max_tokens",
        "seed",
        "presence_penalty",
        "frequency_penalty",
    ):
        value = getattr(options, key)
        if value is not None:
            body[key] = value
    if options.stop:
        body["stop"] = list(options.stop)
    if options.top_logprobs is not None:
        body["logprobs"] = True
        # OpenAI's way to ask for no alternatives is to leave `top_logprobs` out; an explicit
        # 0 makes llama.cpp report no log-probabilities at all. (Left out, llama.cpp sends
        # its default of 20 alternatives, more than asked: the proxy's encoder cuts them.)
        if options.top_logprobs:
            body["top_logprobs"] = options.top_logprobs
    return body


def decode_usage(data: Mapping[str, Any] | None) -> Usage | None:
    if not data:
        return None
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


def _finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    reason = FINISH_REASONS.get(raw or "stop", "stop")
    # Some servers say "stop" even when the reply holds calls.
    if has_calls and reason == "stop":
        return "tool_calls"
    return reason


def _is_byte(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255


def decode_token_bytes(entry: Mapping[str, Any]) -> bytes | None:
    """An entry's `bytes` when they say more than its `token` text, else None.

    A token holding part of a multi-byte character has no text of its own: llama.cpp sends
    "�" or "" as its text (OpenAI "bytes:\\xe4") and the exact bytes in `bytes`, which
    only then are worth keeping. Bytes that are not a list of 0-255 are not kept either.
    """
    raw = entry.get("bytes")
    if not isinstance(raw, list) or not all(map(_is_byte, raw)):
        return None
    exact = bytes(raw)
    # `surrogatepass`: JSON may carry a lone surrogate, whose text then differs from any bytes.
    return None if exact == entry["token"].encode(errors="surrogatepass") else exact


def _alternatives(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The alternatives of an entry in a shape this knows (token text, numeric logprob)."""
    return [
        alt
        for alt in entry.get("top_logprobs") or ()
        if isinstance(alt, Mapping)
        and isinstance(alt.get("token"), str)
        and isinstance(alt.get("logprob"), (int, float))
    ]


def decode_token(entry: Mapping[str, Any]) -> TokenChoice:
    """One entry of `logprobs.content`, whose `token` is known to be text."""
    alternatives = _alternatives(entry)
    top = tuple((alt["token"], float(alt["logprob"])) for alt in alternatives)
    top_bytes = tuple(map(decode_token_bytes, alternatives))
    logprob = entry.get("logprob")
    return TokenChoice(
        entry["token"],
        float(logprob) if isinstance(logprob, (int, float)) else math.nan,
        top,
        decode_token_bytes(entry),
        # () when every alternative's text says its bytes, as `TokenChoice` wants it.
        top_bytes if any(exact is not None for exact in top_bytes) else (),
    )


def decode_tokens(choice: Mapping[str, Any]) -> tuple[TokenChoice, ...]:
    """The tokens of a choice's content with their alternatives (`logprobs.content`), or
    () when the server sent none or in a shape this does not know."""
    logprobs = choice.get("logprobs")
    entries = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(entries, list):
        return ()
    if not all(isinstance(e, Mapping) and isinstance(e.get("token"), str) for e in entries):
        return ()
    return tuple(map(decode_token, entries))


def _reasoning(message: Mapping[str, Any]) -> str:
    """A message's or delta's reasoning: `reasoning_content` (llama.cpp, vLLM, DeepSeek)
    or `reasoning` (OpenRouter, Ollama's compatible API)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def text_delta(text: str, tokens: tuple[TokenChoice, ...]) -> TextDelta:
    return ScoredTextDelta(text, tokens) if tokens else TextDelta(text)


def decode_response(data: Mapping[str, Any]) -> Iterator[Event]:
    """Events for a whole (non-streamed) chat completion."""
    choices = data.get("choices") or []
    message = (choices[0].get("message") if choices else None) or {}
    content = message.get("content")
    splitter = ThinkSplitter()
    if thought := _reasoning(message):
        yield ReasoningDelta(thought)
    if isinstance(content, str) and content:
        yield from splitter.feed(text_delta(content, decode_tokens(choices[0])))
    yield from splitter.finish()
    calls = message.get("tool_calls") or []
    for index, raw in enumerate(calls):
        function = raw.get("function") or {}
        call_id = raw.get("id") or f"call_{index}"
        name = function.get("name") or ""
        arguments_text = function.get("arguments")
        if not isinstance(arguments_text, str):
            arguments_text = json.dumps(arguments_text or {})
        arguments, _ = parse_arguments(arguments_text)
        yield ToolCallStart(call_id, name, index)
        if arguments_text:
            yield ToolCallArgsDelta(call_id, arguments_text)
        yield ToolCallEnd(ToolCall(name, arguments, call_id))
    raw_reason = choices[0].get("finish_reason") if choices else None
    yield Finish(
        _finish_reason(raw_reason, bool(calls)),
        decode_usage(data.get("usage")),
        raw=dict(data),
        model=data.get("model"),
    )


class _PartialCall:
    __slots__ = ("arguments", "id", "name", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []
        self.started = False


class StreamDecoder:
    """Turns chat-completion chunks into events, merging tool-call deltas by index.

    A call starts once its id and name are known; argument fragments that came before
    are released then, so argument deltas always follow their start.
    """

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._order: list[int] = []
        self._reason: str | None = None
        self._usage: Usage | None = None
        self._model: str | None = None
        self._last: Any = None
        self._think = ThinkSplitter()  # a reply's leading <think> block is reasoning
        self.finished = False
        # llama.cpp's account of its own work (prompt read, cache reused, tokens written)
        self.timings: Mapping[str, Any] | None = None

    def feed(self, chunk: Mapping[str, Any]) -> Iterator[Event]:
        self._last = chunk
        self._model = chunk.get("model") or self._model
        usage = decode_usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        if isinstance(timings := chunk.get("timings"), Mapping):
            self.timings = timings
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if thought := _reasoning(delta):
                yield ReasoningDelta(thought)
            content = delta.get("content")
            if isinstance(content, str) and content:
                yield from self._think.feed(text_delta(content, decode_tokens(choice)))
            if raw_calls := delta.get("tool_calls"):
                yield from self._think.finish()
            for raw in raw_calls or []:
                yield from self._feed_call(raw)
            if choice.get("finish_reason"):
                self._reason = choice["finish_reason"]

    def _feed_call(self, raw: Mapping[str, Any]) -> Iterator[Event]:
        index = int(raw.get("index", len(self._order)))
        call = self._calls.get(index)
        if call is None:
            # A new call: the ones before it have their whole names by now.
            for earlier in self._order:
                yield from self._start(earlier)
            call = self._calls[index] = _PartialCall()
            self._order.append(index)
        if raw.get("id"):
            call.id = call.id or raw["id"]
        function = raw.get("function") or {}
        if function.get("name") and not call.started:
            # Some servers split the name across deltas; it is whole once arguments begin.
            call.name += function["name"]
        fragment = function.get("arguments")
        if isinstance(fragment, dict):
            fragment = json.dumps(fragment)
        if fragment:
            call.arguments.append(fragment)
            if call.started:
                yield ToolCallArgsDelta(call.id or "", fragment)
            else:
                yield from self._start(index)

    def _start(self, index: int) -> Iterator[Event]:
        call = self._calls[index]
        if call.started or not call.name:
            return
        call.id = call.id or f"call_{index}"
        call.started = True
        yield ToolCallStart(call.id, call.name, self._order.index(index))
        if call.arguments:
            yield ToolCallArgsDelta(call.id, "".join(call.arguments))

    def finish(self) -> Iterator[Event]:
        """Close the stream: end every call, then the `Finish` event."""
        self.finished = True
        yield from self._think.finish()
        for position, index in enumerate(self._order):
            call = self._calls[index]
            if not call.started:
                call.id = call.id or f"call_{index}"
                call.started = True
                yield ToolCallStart(call.id, call.name, position)
                if call.arguments:
                    yield ToolCallArgsDelta(call.id, "".join(call.arguments))
            arguments, _ = parse_arguments("".join(call.arguments))
            yield ToolCallEnd(ToolCall(call.name, arguments, call.id or f"call_{index}"))
        yield Finish(
            _finish_reason(self._reason, bool(self._order)),
            self._usage,
            raw=self._last,
            model=self._model,
        )

    @property
    def saw_finish_reason(self) -> bool:
        return self._reason is not None


def assistant_json(text: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """An assistant message as OpenAI writes it, in a request or in a reply: the calls
    under `tool_calls`, and `content` null beside them when there is no text."""
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    return out
