"""OpenAI chat completions, server side, decoding: a request body into a `ChatRequest`,
every field checked before anything goes upstream."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
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
from parlay.image import Image
from parlay.request import (
    MAX_TOP_LOGPROBS,
    ChatRequest,
    GenerationOptions,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
)
from parlay.wire._check import (
    bounded_int,
    bounded_number,
    called_tool,
    field,
    flag,
    stop_list,
)
from parlay.wire.arguments import parse_arguments
from parlay.wire.images import from_chat, from_responses
from parlay.wire.tool_search import check_shown, deferred, take_references, with_references
from parlay.wire.validate import (
    DEFAULT_LIMITS,
    Limits,
    check_choice_has_tools,
    check_count,
    check_tools,
    output_format,
)


@frozen
class OpenAIRequest:
    """A decoded request: the internal `ChatRequest` plus what only the wire cares about."""

    chat: ChatRequest
    model: str
    stream: bool = False
    include_usage: bool = False


# -- decoding ------------------------------------------------------------------------------


def _content_text(content: Any, where: str) -> str:
    """Message content that holds text only (system and assistant turns)."""
    text, images = content_parts(content, where)
    if images:
        raise InvalidRequestError(f"`{where}` holds an image: images go in user messages")
    return text


def content_parts(content: Any, where: str) -> tuple[str, tuple[Image, ...]]:
    """Message content: a string, or an array of text and image parts (chat completions'
    `image_url`, Responses' `input_image`), the text joined and the images after it."""
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise InvalidRequestError(f"`{where}` must be a string or an array of content parts")
    texts: list[str] = []
    images: list[Image] = []
    for i, part in enumerate(content):
        if not isinstance(part, Mapping):
            raise InvalidRequestError(f"`{where}[{i}]` must be a content part object")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            texts.append(field(part, "text", str, where=f"{where}[{i}]", required=True))
        elif kind == "refusal":
            texts.append(str(part.get("refusal") or ""))
        elif isinstance(kind, str) and kind in _IMAGE_PARTS:
            images.append(_IMAGE_PARTS[kind](part, f"{where}[{i}]"))
        else:
            raise InvalidRequestError(
                f"`{where}[{i}].type` is {kind!r}: this server reads text and image parts"
            )
    return "".join(texts), tuple(images)


_IMAGE_PARTS = {"image_url": from_chat, "input_image": from_responses}


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
            out.append(UserMessage(*content_parts(raw.get("content"), f"{where}.content")))
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
            holder = "assistant message's tool_calls"
            name = called_tool(names, call_id, f"{where}.tool_call_id", holder)
            content, refs = take_references(raw.get("content"), f"{where}.content")
            output, images = content_parts(content, f"{where}.content")
            output = with_references(output, refs) if refs else output
            out.append(ToolResult(call_id, name, output, images=images, references=refs))
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
        parameters = parameters or {"type": "object", "properties": {}}
        specs.append(ToolSpec(name, description, parameters, deferred=deferred(raw, where)))
    check_tools(specs, "tools")
    check_shown(specs, "tools")
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
    spec: Mapping[str, Any] = {}
    if kind == "json_schema":
        spec = field(raw, "json_schema", dict, where="response_format", required=True)
    return output_format(
        kind, spec, "response_format.json_schema", kind_at="response_format.type",
        schema_required=False,
    )  # fmt: skip


def decode_top_logprobs(body: Mapping[str, Any]) -> int | None:
    """`logprobs` and `top_logprobs` as `GenerationOptions.top_logprobs`: the alternatives
    per token asked for (0 with `logprobs: true` alone), None when not asked."""
    logprobs = field(body, "logprobs", bool)
    top: int | None = field(body, "top_logprobs", int)
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
        presence_penalty=bounded_number(body, "presence_penalty", -2, 2),
        frequency_penalty=bounded_number(body, "frequency_penalty", -2, 2),
    )
    parallel = field(body, "parallel_tool_calls", bool)
    stream = flag(body, "stream")
    stream_options = field(body, "stream_options", dict) or {}
    include_usage = flag(stream_options, "include_usage", where="stream_options")
    tools = decode_tools(body.get("tools"))
    choice = decode_tool_choice(body.get("tool_choice"))
    check_choice_has_tools(choice, tools, body.get("tool_choice"))
    chat = ChatRequest(
        messages,
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=True if parallel is None else parallel,
        response_format=decode_response_format(body.get("response_format")),
        options=options,
        model=model,
    )
    return OpenAIRequest(chat, model, stream, include_usage)
