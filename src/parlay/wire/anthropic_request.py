"""Anthropic Messages, server side, decoding: a request body into a `ChatRequest`, every
field checked before anything goes upstream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice, ToolSpec
from parlay.wire._check import (
    bounded_int,
    bounded_number,
    called_tool,
    field,
    flag,
    stop_list,
)
from parlay.wire.images import from_anthropic
from parlay.wire.tool_search import (
    all_shown,
    check_shown,
    deferred,
    is_server_search,
    take_references,
    with_references,
)
from parlay.wire.validate import (
    DEFAULT_LIMITS,
    Limits,
    check_choice_has_tools,
    check_count,
    check_schema,
    check_tools,
)


@frozen
class AnthropicRequest:
    chat: ChatRequest
    model: str
    stream: bool = False


# -- decoding ------------------------------------------------------------------------------


def _block_text(block: Mapping[str, Any], where: str) -> str:
    return str(field(block, "text", str, where=where, required=True))


def _result_content(content: Any, where: str) -> tuple[str, tuple[Image, ...]]:
    """A tool_result's content: a string, or an array of text and image blocks."""
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if isinstance(content, list):
        parts: list[str] = []
        images: list[Image] = []
        for i, block in enumerate(content):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "image":
                images.append(from_anthropic(block, f"{where}[{i}]"))
                continue
            if kind != "text":
                raise InvalidRequestError(
                    f"`{where}[{i}]` must be a text or image block: this server reads "
                    "text and image results"
                )
            parts.append(_block_text(block, f"{where}[{i}]"))
        return "\n".join(parts), tuple(images)
    raise InvalidRequestError(f"`{where}` must be a string or an array of content blocks")


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise InvalidRequestError(f"`{where}` must be a string or an array of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise InvalidRequestError(f"`{where}[{i}]` must be a content block object")
    return content


def decode_system(raw: Any) -> list[Message]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [SystemMessage(raw)] if raw else []
    if isinstance(raw, list):
        texts = []
        for i, block in enumerate(raw):
            if not isinstance(block, Mapping) or block.get("type") != "text":
                raise InvalidRequestError(f"`system[{i}]` must be a text block")
            texts.append(_block_text(block, f"system[{i}]"))
        return [SystemMessage("\n\n".join(texts))]
    raise InvalidRequestError("`system` must be a string or an array of text blocks")


def decode_messages(raw_messages: Any) -> tuple[Message, ...]:
    if not isinstance(raw_messages, list) or not raw_messages:
        raise InvalidRequestError("`messages` must be a non-empty array")
    out: list[Message] = []
    names: dict[str, str] = {}  # tool_use id -> tool name, for the results that follow
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        role = field(raw, "role", str, where=where, required=True)
        if "content" not in raw:
            raise InvalidRequestError(f"`{where}.content` is required")
        blocks = _blocks(raw["content"], f"{where}.content")
        if role == "assistant":
            out.append(_assistant_turn(blocks, where, names))
        elif role == "user":
            out.extend(_user_turn(blocks, where, names))
        elif role == "system":
            out.append(_system_turn(blocks, where))
        else:
            raise InvalidRequestError(f"`{where}.role` is {role!r}: use user, assistant or system")
    return tuple(out)


def _system_turn(blocks: list[Mapping[str, Any]], where: str) -> SystemMessage:
    """A system message inside `messages` (Claude Code sends one whenever its Agent tool is
    offered, beta `mid-conversation-system`): kept at its place in the conversation."""
    texts = []
    for bw, kind, block in _each_block(blocks, where):
        if kind != "text":
            raise InvalidRequestError(f"`{bw}.type` is {kind!r}: system turns hold text blocks")
        texts.append(_block_text(block, bw))
    return SystemMessage("\n\n".join(texts))


def _each_block(
    blocks: list[Mapping[str, Any]], where: str
) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """Each content block with where it is (for errors) and its type."""
    for j, block in enumerate(blocks):
        yield f"{where}.content[{j}]", block.get("type"), block


def _assistant_turn(
    blocks: list[Mapping[str, Any]], where: str, names: dict[str, str]
) -> AssistantMessage:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for bw, kind, block in _each_block(blocks, where):
        if kind == "text":
            texts.append(_block_text(block, bw))
        elif kind == "tool_use":
            call_id = field(block, "id", str, where=bw, required=True)
            name = field(block, "name", str, where=bw, required=True)
            arguments = field(block, "input", dict, where=bw) or {}
            names[call_id] = name
            calls.append(ToolCall(name, arguments, call_id))
        elif kind not in ("thinking", "redacted_thinking"):  # reasoning is not replayed
            raise InvalidRequestError(
                f"`{bw}.type` is {kind!r}: assistant turns hold text and tool_use blocks"
            )
    return AssistantMessage("".join(texts), tuple(calls))


def _user_turn(blocks: list[Mapping[str, Any]], where: str, names: dict[str, str]) -> list[Message]:
    """A user turn: its tool results, then its text as one message."""
    out: list[Message] = []
    texts: list[str] = []
    images: list[Image] = []
    for bw, kind, block in _each_block(blocks, where):
        if kind == "text":
            texts.append(_block_text(block, bw))
        elif kind == "tool_result":
            call_id = field(block, "tool_use_id", str, where=bw, required=True)
            name = called_tool(names, call_id, f"{bw}.tool_use_id", "tool_use block")
            content, refs = take_references(block.get("content"), f"{bw}.content")
            text, shown = _result_content(content, f"{bw}.content")
            text = with_references(text, refs) if refs else text
            if field(block, "is_error", bool, where=bw):
                error = text or "the tool failed"
                out.append(ToolResult(call_id, name, error=error, images=shown, references=refs))
            else:
                out.append(ToolResult(call_id, name, text, images=shown, references=refs))
        elif kind == "image":
            images.append(from_anthropic(block, bw))
        else:
            raise InvalidRequestError(
                f"`{bw}.type` is {kind!r}: this server reads text, image and tool_result blocks"
            )
    if texts or images:
        out.append(UserMessage("\n".join(texts), tuple(images)))
    return out


def decode_tools(raw_tools: Any) -> tuple[ToolSpec, ...]:
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise InvalidRequestError("`tools` must be an array")
    specs = []
    server_search = False
    for i, raw in enumerate(raw_tools):
        where = f"tools[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        if is_server_search(raw.get("type")):
            server_search = True  # one parlay cannot run: see `all_shown` below
            continue
        if raw.get("type") not in (None, "custom"):
            raise InvalidRequestError(
                f"`{where}.type` is {raw.get('type')!r}: this server runs client tools only"
            )
        name = field(raw, "name", str, where=where, required=True)
        description = field(raw, "description", str, where=where) or ""
        schema = field(raw, "input_schema", dict, where=where, required=True)
        specs.append(ToolSpec(name, description, schema, deferred=deferred(raw, where)))
    check_tools(specs, "tools")
    if server_search:
        return all_shown(specs)
    check_shown(specs, "tools")
    return tuple(specs)


def decode_tool_choice(raw: Any) -> tuple[ToolChoice, bool]:
    """The choice and whether parallel calls are allowed."""
    if raw is None:
        return ToolChoice("auto"), True
    if not isinstance(raw, Mapping):
        raise InvalidRequestError(
            '`tool_choice` must be an object such as {"type": "auto"}, {"type": "any"}, '
            '{"type": "tool", "name": ...} or {"type": "none"}'
        )
    parallel = not flag(raw, "disable_parallel_tool_use", where="tool_choice")
    kind = raw.get("type")
    if kind == "auto":
        return ToolChoice("auto"), parallel
    if kind == "any":
        return ToolChoice("required"), parallel
    if kind == "none":
        return ToolChoice("none"), parallel
    if kind == "tool":
        name = field(raw, "name", str, where="tool_choice", required=True)
        return ToolChoice("tool", name), parallel
    raise InvalidRequestError("`tool_choice.type` must be auto, any, tool or none")


def decode_output_format(raw: Any) -> ResponseFormat | None:
    """`output_config.format` (structured outputs): a JSON schema the reply must match."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidRequestError("`output_config` must be an object")
    fmt = raw.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        raise InvalidRequestError(
            '`output_config.format` must be {"type": "json_schema", "schema": {...}}'
        )
    schema = field(fmt, "schema", dict, where="output_config.format", required=True)
    check_schema(schema, "output_config.format.schema")
    return ResponseFormat(schema)


def decode_request(
    body: Any, limits: Limits = DEFAULT_LIMITS, *, counting: bool = False
) -> AnthropicRequest:
    """A Messages request body (already parsed JSON) as an `AnthropicRequest`, every field
    checked (types, ranges, tool schemas) so that nothing malformed goes upstream.

    `counting`: the body of `/v1/messages/count_tokens`, which has no `max_tokens`."""
    if not isinstance(body, Mapping):
        raise InvalidRequestError("the request body must be a JSON object")
    model = field(body, "model", str, required=True)
    max_tokens = bounded_int(body, "max_tokens", 1, limits.max_tokens)
    if max_tokens is None and not counting:
        raise InvalidRequestError("`max_tokens` is required")
    if isinstance(body.get("messages"), list):
        check_count(body["messages"], "messages", limits.max_messages)
    messages = (*decode_system(body.get("system")), *decode_messages(body.get("messages")))
    choice, parallel = decode_tool_choice(body.get("tool_choice"))
    options = GenerationOptions(
        # Anthropic's own ranges: temperature is 0 to 1 there, not OpenAI's 0 to 2.
        temperature=bounded_number(body, "temperature", 0, 1),
        top_p=bounded_number(body, "top_p", 0, 1),
        max_tokens=max_tokens,
        stop=stop_list(body.get("stop_sequences"), "stop_sequences"),
    )
    tools = decode_tools(body.get("tools"))
    check_choice_has_tools(choice, tools, body.get("tool_choice"))
    chat = ChatRequest(
        messages,
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=parallel,
        response_format=decode_output_format(body.get("output_config")),
        options=options,
        model=model,
    )
    return AnthropicRequest(chat, model, flag(body, "stream"))
