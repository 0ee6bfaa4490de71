"""OpenAI chat completions, server side: decode requests, encode responses and SSE streams.

The proxy reads what OpenAI clients send into a `ChatRequest` and writes parlay's events
back out as `chat.completion` objects or `chat.completion.chunk` streams.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

from attrs import frozen

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.errors import InvalidRequestError
from parlay.events import (
    Event,
    Finish,
    FinishReason,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.request import (
    MAX_TOP_LOGPROBS,
    ChatRequest,
    GenerationOptions,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
)
from parlay.wire._check import bounded_int, bounded_number, field, flag, stop_list
from parlay.wire.arguments import parse_arguments
from parlay.wire.reply import Reply
from parlay.wire.validate import DEFAULT_LIMITS, Limits, check_count, check_schema, check_tools

FINISH_OUT: dict[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    # OpenAI has no "error" reason; the error itself travels as an error object.
    "error": "stop",
}


@frozen
class OpenAIRequest:
    """A decoded request: the internal `ChatRequest` plus what only the wire cares about."""

    chat: ChatRequest
    model: str
    stream: bool = False
    include_usage: bool = False


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


# -- decoding ------------------------------------------------------------------------------


def _content_text(content: Any, where: str) -> str:
    """Message content: a string, or an array of parts of which only text is understood."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for i, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise InvalidRequestError(f"`{where}[{i}]` must be a content part object")
            kind = part.get("type")
            if kind in ("text", "input_text", "output_text"):
                texts.append(field(part, "text", str, where=f"{where}[{i}]", required=True))
            elif kind == "refusal":
                texts.append(str(part.get("refusal") or ""))
            else:
                raise InvalidRequestError(
                    f"`{where}[{i}].type` is {kind!r}: this server reads text parts only"
                )
        return "".join(texts)
    raise InvalidRequestError(f"`{where}` must be a string or an array of content parts")


def _decode_call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise InvalidRequestError(f"`{where}` must be an object")
    function = field(raw, "function", dict, where=where, required=True)
    name = field(function, "name", str, where=f"{where}.function", required=True)
    arguments_raw = function.get("arguments")
    if isinstance(arguments_raw, Mapping):
        arguments = dict(arguments_raw)
    else:
        if arguments_raw is not None and not isinstance(arguments_raw, str):
            raise InvalidRequestError(f"`{where}.function.arguments` must be a JSON string")
        arguments, _ = parse_arguments(arguments_raw)
    call_id = field(raw, "id", str, where=where) or f"call_{uuid.uuid4().hex[:24]}"
    return ToolCall(name, arguments, call_id)


def decode_messages(raw_messages: Any) -> tuple[Message, ...]:
    if not isinstance(raw_messages, list) or not raw_messages:
        raise InvalidRequestError("`messages` must be a non-empty array")
    out: list[Message] = []
    names: dict[str, str] = {}  # call id -> tool name, for tool messages
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        role = field(raw, "role", str, where=where, required=True)
        if role in ("system", "developer"):
            out.append(SystemMessage(_content_text(raw.get("content"), f"{where}.content")))
        elif role == "user":
            out.append(UserMessage(_content_text(raw.get("content"), f"{where}.content")))
        elif role == "assistant":
            raw_calls = field(raw, "tool_calls", list, where=where) or []
            calls = tuple(
                _decode_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(raw_calls)
            )
            for call in calls:
                names[call.id] = call.name
            text = _content_text(raw.get("content"), f"{where}.content")
            out.append(AssistantMessage(text, calls))
        elif role == "tool":
            call_id = field(raw, "tool_call_id", str, where=where, required=True)
            name = names.get(call_id)
            if name is None:
                raise InvalidRequestError(
                    f"`{where}.tool_call_id` is {call_id!r}, which no earlier assistant "
                    "message's tool_calls holds"
                )
            output = _content_text(raw.get("content"), f"{where}.content")
            out.append(ToolResult(call_id, name, output))
        else:
            raise InvalidRequestError(
                f"`{where}.role` is {role!r}: use system, developer, user, assistant or tool"
            )
    return tuple(out)


def decode_tools(raw_tools: Any) -> tuple[ToolSpec, ...]:
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise InvalidRequestError("`tools` must be an array")
    specs: list[ToolSpec] = []
    for i, raw in enumerate(raw_tools):
        where = f"tools[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        if raw.get("type", "function") != "function":
            raise InvalidRequestError(f"`{where}.type` must be 'function'")
        function = field(raw, "function", dict, where=where, required=True)
        name = field(function, "name", str, where=f"{where}.function", required=True)
        description = field(function, "description", str, where=f"{where}.function") or ""
        parameters = field(function, "parameters", dict, where=f"{where}.function")
        specs.append(
            ToolSpec(name, description, parameters or {"type": "object", "properties": {}})
        )
    check_tools(specs, "tools")
    return tuple(specs)


def decode_tool_choice(raw: Any) -> ToolChoice:
    if raw is None:
        return ToolChoice("auto")
    if raw in ("auto", "none", "required"):
        return ToolChoice(raw)
    if isinstance(raw, Mapping):
        function = raw.get("function")
        if raw.get("type") == "function" and isinstance(function, Mapping):
            name = function.get("name")
            if isinstance(name, str) and name:
                return ToolChoice("tool", name)
    raise InvalidRequestError(
        "`tool_choice` must be 'auto', 'none', 'required' or "
        '{"type": "function", "function": {"name": ...}}'
    )


def decode_response_format(raw: Any) -> ResponseFormat | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidRequestError("`response_format` must be an object")
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat({"type": "object"}, "json_object", strict=False)
    if kind == "json_schema":
        spec = field(raw, "json_schema", dict, where="response_format", required=True)
        schema = field(spec, "schema", dict, where="response_format.json_schema") or {}
        check_schema(schema, "response_format.json_schema.schema")
        name = field(spec, "name", str, where="response_format.json_schema") or "response"
        strict = flag(spec, "strict", where="response_format.json_schema")
        return ResponseFormat(schema, name, strict)
    raise InvalidRequestError(
        "`response_format.type` must be 'text', 'json_object' or 'json_schema'"
    )


def decode_top_logprobs(body: Mapping[str, Any]) -> int | None:
    """`logprobs` and `top_logprobs` as `GenerationOptions.top_logprobs`: the alternatives
    per token asked for (0 with `logprobs: true` alone), None when not asked."""
    logprobs = field(body, "logprobs", bool)
    top = field(body, "top_logprobs", int)
    if not logprobs:
        if top is not None:
            raise InvalidRequestError("`top_logprobs` needs `logprobs: true` as well")
        return None
    if top is None:
        return 0
    if not 0 <= top <= MAX_TOP_LOGPROBS:
        raise InvalidRequestError(
            f"`top_logprobs` must be an integer from 0 to {MAX_TOP_LOGPROBS}, got {top}"
        )
    return top


def decode_request(body: Any, limits: Limits = DEFAULT_LIMITS) -> OpenAIRequest:
    """A chat-completions request body (already parsed JSON) as an `OpenAIRequest`, every
    field checked (types, ranges, tool schemas) so that nothing malformed goes upstream."""
    if not isinstance(body, Mapping):
        raise InvalidRequestError("the request body must be a JSON object")
    model = field(body, "model", str, required=True)
    if body.get("functions") is not None or body.get("function_call") is not None:
        # Dropping them would silently turn tool calling off: say what to send instead.
        raise InvalidRequestError(
            "`functions` / `function_call` are the deprecated forms: send `tools` and "
            "`tool_choice` instead"
        )
    if isinstance(body.get("messages"), list):
        check_count(body["messages"], "messages", limits.max_messages)
    messages = decode_messages(body.get("messages"))
    n = field(body, "n", int)
    if n not in (None, 1):
        raise InvalidRequestError("`n` must be 1: this server returns one choice")
    max_tokens = bounded_int(body, "max_completion_tokens", 1, limits.max_tokens)
    if max_tokens is None:
        max_tokens = bounded_int(body, "max_tokens", 1, limits.max_tokens)
    seed = bounded_int(body, "seed", -(2**63), 2**63 - 1)
    options = GenerationOptions(
        temperature=bounded_number(body, "temperature", 0, 2),
        top_p=bounded_number(body, "top_p", 0, 1),
        max_tokens=max_tokens,
        stop=stop_list(body.get("stop"), "stop"),
        seed=seed,
        top_logprobs=decode_top_logprobs(body),
    )
    parallel = field(body, "parallel_tool_calls", bool)
    stream = flag(body, "stream")
    stream_options = field(body, "stream_options", dict) or {}
    include_usage = flag(stream_options, "include_usage", where="stream_options")
    chat = ChatRequest(
        messages,
        tools=decode_tools(body.get("tools")),
        tool_choice=decode_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=True if parallel is None else parallel,
        response_format=decode_response_format(body.get("response_format")),
        options=options,
        model=model,
    )
    return OpenAIRequest(chat, model, stream, include_usage)


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
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in reply.calls
        ]
    elif message["content"] is None:
        message["content"] = ""
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
            if not event.text:
                return []
            chunk = self._chunk({"content": event.text})
            if self.top_logprobs is not None and isinstance(event, ScoredTextDelta):
                logprobs = encode_logprobs(event.tokens, self.top_logprobs)
                chunk["choices"][0]["logprobs"] = logprobs
            return [chunk]
        if isinstance(event, ToolCallStart):
            self._saw_calls = True
            index = self._index.setdefault(event.id, len(self._index))
            self._sent_args[event.id] = False
            return [
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": event.id,
                                "type": "function",
                                "function": {"name": event.name, "arguments": ""},
                            }
                        ]
                    }
                )
            ]
        if isinstance(event, ToolCallArgsDelta):
            if not event.delta:
                return []
            self._sent_args[event.id] = True
            return [self._args_chunk(event.id, event.delta)]
        if isinstance(event, ToolCallEnd):
            if event.id not in self._index:
                # An end without a start: announce the whole call at once.
                out = self.feed(ToolCallStart(event.id, event.call.name, len(self._index)))
                return [*out, self._args_chunk(event.id, event.call.arguments_json)]
            if not self._sent_args.get(event.id):
                # No fragment streamed: send the arguments whole so clients get valid JSON.
                self._sent_args[event.id] = True
                return [self._args_chunk(event.id, event.call.arguments_json)]
            return []
        if isinstance(event, Finish):
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
        return []

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


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
