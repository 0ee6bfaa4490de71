"""OpenAI Responses API, server side, decoding: a `POST /v1/responses` body into a
`ChatRequest`, every field checked before anything goes upstream.

The proxy keeps no state between requests, so what the Responses API keeps on OpenAI's
side (`previous_response_id`, `store: true`, `conversation`, stored prompts, background
runs, item references) is refused with a 400 that says so; every client that works with
parlay sends the whole history in `input` instead. Fields that change nothing here
(`reasoning`, `include`, `prompt_cache_key`, `metadata`, ...) are accepted and ignored,
as unknown fields are by the chat-completions decoder.

Tools that are not functions (`web_search`, `file_search`, `custom`, `mcp`, ...) are not
offered to the model: their names travel in `ToolLayout.not_offered` for a response
header. Function tools inside a `namespace` tool are offered under their own names, and a
call of one goes back to the client with its `namespace` (see `ToolLayout`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from attrs import field as attr_field
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
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice, ToolSpec
from parlay.wire._check import bounded_int, bounded_number, called_tool, field, flag
from parlay.wire.arguments import parse_arguments
from parlay.wire.openai_request import _content_text as content_text
from parlay.wire.openai_request import content_parts
from parlay.wire.validate import (
    DEFAULT_LIMITS,
    Limits,
    check_choice_has_tools,
    check_count,
    check_tools,
    output_format,
)

# Input items that carry nothing a chat model can read, or record tools parlay never
# offers: left out of what the model sees. Reasoning is the upstream model's own (and
# usually encrypted); the others are calls of hosted tools a client replays from an
# earlier conversation with OpenAI.
DROPPED_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "image_generation_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
    }
)

# Request fields that ask the server to keep or fetch state: `store: true` is checked apart.
_STATEFUL = ("previous_response_id", "conversation", "prompt")

STATELESS = (
    "this proxy keeps no state between requests: send the whole conversation in `input` "
    "(with `store` false or left out)"
)


@frozen
class ToolLayout:
    """Which of the client's tools the model is offered, and under which names.

    `namespaced`: offered name -> (namespace, the function's name inside it), for the
    functions of `namespace` tools. `not_offered`: the tools the model never sees, by
    type and name (`web_search`, `custom:apply_patch`, `mcp:deepwiki`).
    """

    namespaced: dict[str, tuple[str, str]]
    not_offered: tuple[str, ...]
    # (namespace, name) -> offered name: `namespaced` the other way round.
    by_key: dict[tuple[str, str], str] = attr_field(init=False, eq=False, repr=False)

    @by_key.default
    def _reverse(self) -> dict[tuple[str, str], str]:
        return {key: name for name, key in self.namespaced.items()}

    def offered_name(self, name: str, namespace: str | None) -> str:
        """The name the model knows a (namespace, name) function by."""
        if namespace is None or not self.namespaced:
            return name
        return self.by_key.get((namespace, name), name)


def _label(raw: Any, kind: str) -> str:
    name = (raw.get("name") or raw.get("server_label")) if isinstance(raw, Mapping) else None
    return f"{kind}:{name}"[:140] if isinstance(name, str) and name else kind[:140]


def tool_layout(raw_tools: Any) -> ToolLayout:
    """The layout of `tools` (already checked to be a list of objects, or absent)."""
    taken = {
        t["name"]
        for t in raw_tools or ()
        if isinstance(t, Mapping)
        and t.get("type", "function") == "function"
        and isinstance(t.get("name"), str)  # any other is refused by `decode_tools`
    }
    namespaced: dict[str, tuple[str, str]] = {}
    not_offered: list[str] = []
    for raw in raw_tools or ():
        if not isinstance(raw, Mapping):
            continue
        kind = raw.get("type", "function")
        if kind == "function":
            continue
        if kind != "namespace" or not isinstance(raw.get("name"), str):
            not_offered.append(_label(raw, str(kind)))
            continue
        space = raw["name"]
        inner_tools = raw.get("tools")
        for inner in inner_tools if isinstance(inner_tools, list) else ():
            name = inner.get("name") if isinstance(inner, Mapping) else None
            if not isinstance(name, str) or inner.get("type", "function") != "function":
                kind = inner.get("type", "tool") if isinstance(inner, Mapping) else "tool"
                not_offered.append(f"{space}.{_label(inner, str(kind))}"[:140])
                continue
            # A name another tool already has is offered qualified by its namespace.
            offered = name if name not in taken else f"{space}.{name}"
            taken.add(offered)
            namespaced[offered] = (space, name)
    return ToolLayout(namespaced, tuple(not_offered))


@frozen
class ResponsesRequest:
    """A decoded request: the internal `ChatRequest` plus what only the wire needs."""

    chat: ChatRequest
    model: str
    stream: bool
    layout: ToolLayout


# -- tools -----------------------------------------------------------------------------


def _function_spec(raw: Mapping[str, Any], where: str, name: str | None = None) -> ToolSpec:
    own = field(raw, "name", str, where=where, required=True)
    description = field(raw, "description", str, where=where) or ""
    parameters = field(raw, "parameters", dict, where=where)
    field(raw, "strict", bool, where=where)  # accepted: every call is checked anyway
    return ToolSpec(name or own, description, parameters or {"type": "object", "properties": {}})


def decode_tools(raw_tools: Any, layout: ToolLayout) -> tuple[ToolSpec, ...]:
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise InvalidRequestError("`tools` must be an array")
    offered = layout.by_key
    specs: list[ToolSpec] = []
    for i, raw in enumerate(raw_tools):
        where = f"tools[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        kind = raw.get("type", "function")
        if kind == "function":
            specs.append(_function_spec(raw, where))
        elif kind == "namespace":
            specs.extend(_namespace_specs(raw, where, offered))
        elif not isinstance(kind, str):
            raise InvalidRequestError(f"`{where}.type` must be a string")
    check_tools(specs, "tools")
    return tuple(specs)


def _namespace_specs(
    raw: Mapping[str, Any], where: str, offered: dict[tuple[str, str], str]
) -> list[ToolSpec]:
    """The offered tools of a namespace, in its order."""
    space = field(raw, "name", str, where=where, required=True)
    inner = field(raw, "tools", list, where=where) or []
    specs: list[ToolSpec] = []
    for j, tool in enumerate(inner):
        if not isinstance(tool, Mapping):
            raise InvalidRequestError(f"`{where}.tools[{j}]` must be an object")
        key = (space, tool.get("name"))
        if key in offered:
            specs.append(_function_spec(tool, f"{where}.tools[{j}]", offered[key]))
    return specs


def _allowed(raw: Mapping[str, Any], specs: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    listed = field(raw, "tools", list, where="tool_choice", required=True)
    names = {
        t.get("name") for t in listed if isinstance(t, Mapping) and t.get("type") == "function"
    }
    allowed = tuple(spec for spec in specs if spec.name in names)
    if not allowed and raw.get("mode") == "required":
        raise InvalidRequestError(
            "`tool_choice.tools` names none of the function tools, and its mode is 'required'"
        )
    return allowed


def decode_tool_choice(
    raw: Any, specs: tuple[ToolSpec, ...]
) -> tuple[ToolChoice, tuple[ToolSpec, ...]]:
    """The choice, and the tools the model is offered under it (`allowed_tools` narrows
    them; the others stay in the request for the client's own bookkeeping)."""
    if raw is None:
        return ToolChoice("auto"), specs
    if raw in ("auto", "none", "required"):
        return ToolChoice(raw), specs
    if isinstance(raw, Mapping):
        kind = raw.get("type")
        if kind == "function":
            name = field(raw, "name", str, where="tool_choice", required=True)
            return ToolChoice("tool", name), specs
        if kind == "allowed_tools" and raw.get("mode") in ("auto", "required"):
            return ToolChoice(raw["mode"]), _allowed(raw, specs)
        if isinstance(kind, str):
            raise InvalidRequestError(
                f"`tool_choice` asks for a {kind!r} tool: this server offers function tools only"
            )
    raise InvalidRequestError(
        "`tool_choice` must be 'auto', 'none', 'required', "
        '{"type": "function", "name": ...} or {"type": "allowed_tools", "mode": ..., "tools": ...}'
    )


def decode_text_format(raw: Any) -> ResponseFormat | None:
    """`text.format` as structured output (`text.verbosity` is accepted and ignored)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidRequestError("`text` must be an object")
    spec = field(raw, "format", dict, where="text")
    if spec is None:
        return None
    return output_format(
        spec.get("type"), spec, "text.format", kind_at="text.format.type", schema_required=True
    )


# -- input -----------------------------------------------------------------------------


class _History:
    """Input items into messages: consecutive assistant text and calls make one turn."""

    def __init__(self, layout: ToolLayout) -> None:
        self.layout = layout
        self.messages: list[Message] = []
        self.names: dict[str, str] = {}  # call id -> offered tool name
        self._open_turn = False  # whether the last message is an assistant turn to extend

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self._open_turn = isinstance(message, AssistantMessage)

    def call(self, raw: Mapping[str, Any], where: str) -> None:
        name = field(raw, "name", str, where=where, required=True)
        namespace = field(raw, "namespace", str, where=where)
        arguments_raw = field(raw, "arguments", str, where=where)
        arguments, _ = parse_arguments(arguments_raw)
        call_id = field(raw, "call_id", str, where=where) or f"call_{uuid.uuid4().hex[:24]}"
        call = ToolCall(self.layout.offered_name(name, namespace), arguments, call_id)
        self.names[call_id] = call.name
        last = self.messages[-1] if self._open_turn else None
        if isinstance(last, AssistantMessage):
            self.messages[-1] = AssistantMessage(last.content, (*last.tool_calls, call))
        else:
            self.add(AssistantMessage("", (call,)))

    def result(self, raw: Mapping[str, Any], where: str) -> None:
        call_id = field(raw, "call_id", str, where=where, required=True)
        name = called_tool(self.names, call_id, f"{where}.call_id", "`function_call` item")
        # Codex's `view_image` answers with an `input_image` part in `output`.
        text, images = content_parts(raw.get("output"), f"{where}.output")
        self.add(ToolResult(call_id, name, text, images=images))

    def message(self, raw: Mapping[str, Any], where: str) -> None:
        role = field(raw, "role", str, where=where, required=True)
        if role == "user":  # `codex exec -i` sends its images in the first one
            self.add(UserMessage(*content_parts(raw.get("content"), f"{where}.content")))
            return
        text = content_text(raw.get("content"), f"{where}.content")
        if role in ("system", "developer"):
            self.add(SystemMessage(text))
        elif role == "assistant":
            self.add(AssistantMessage(text))
        else:
            raise InvalidRequestError(
                f"`{where}.role` is {role!r}: use user, system, developer or assistant"
            )


def decode_input(raw_input: Any, layout: ToolLayout) -> tuple[Message, ...]:
    if isinstance(raw_input, str):
        return (UserMessage(raw_input),)
    if not isinstance(raw_input, list):
        raise InvalidRequestError("`input` must be a string or an array of input items")
    history = _History(layout)
    for i, raw in enumerate(raw_input):
        where = f"input[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"`{where}` must be an object")
        kind = field(raw, "type", str, where=where) or "message"
        if kind == "message":
            history.message(raw, where)
        elif kind == "function_call":
            history.call(raw, where)
        elif kind == "function_call_output":
            history.result(raw, where)
        elif kind == "item_reference":
            raise InvalidRequestError(f"`{where}` refers to a stored item: {STATELESS}")
        elif kind not in DROPPED_ITEMS:
            raise InvalidRequestError(
                f"`{where}.type` is {str(kind)[:80]!r}: this server reads message, "
                "function_call, function_call_output and reasoning items"
            )
    return tuple(history.messages)


# -- the request ---------------------------------------------------------------------------


def _refuse_state(body: Mapping[str, Any]) -> None:
    for key in _STATEFUL:
        if body.get(key) is not None:
            raise InvalidRequestError(f"`{key}` is not served: {STATELESS}")
    if field(body, "store", bool):
        raise InvalidRequestError(f"`store: true` is not served: {STATELESS}")
    if field(body, "background", bool):
        raise InvalidRequestError(f"`background: true` is not served: {STATELESS}")


def decode_request(body: Any, limits: Limits = DEFAULT_LIMITS) -> ResponsesRequest:
    """A Responses request body (already parsed JSON) as a `ResponsesRequest`, every field
    checked (types, ranges, tool schemas) so that nothing malformed goes upstream."""
    if not isinstance(body, Mapping):
        raise InvalidRequestError("the request body must be a JSON object")
    model = field(body, "model", str, required=True)
    _refuse_state(body)
    raw_input = body.get("input")
    if raw_input is None:
        raise InvalidRequestError("`input` is required")
    if isinstance(raw_input, list):
        check_count(raw_input, "input", limits.max_messages)
    raw_tools = body.get("tools")
    layout = tool_layout(raw_tools if isinstance(raw_tools, list) else None)
    messages = decode_input(raw_input, layout)
    instructions = field(body, "instructions", str)
    if instructions:
        messages = (SystemMessage(instructions), *messages)
    if not messages:
        raise InvalidRequestError("`input` holds no message the model can read")
    tools = decode_tools(raw_tools, layout)
    choice, offered = decode_tool_choice(body.get("tool_choice"), tools)
    check_choice_has_tools(choice, offered, body.get("tool_choice"))
    options = GenerationOptions(
        temperature=bounded_number(body, "temperature", 0, 2),
        top_p=bounded_number(body, "top_p", 0, 1),
        max_tokens=bounded_int(body, "max_output_tokens", 1, limits.max_tokens),
    )
    parallel = field(body, "parallel_tool_calls", bool)
    chat = ChatRequest(
        messages,
        tools=offered,
        tool_choice=choice,
        parallel_tool_calls=True if parallel is None else parallel,
        response_format=decode_text_format(body.get("text")),
        options=options,
        model=model,
    )
    return ResponsesRequest(chat, model, flag(body, "stream"), layout)
