"""Malformed requests, one per kind, for both protocols: each must get a 4xx in the
client's protocol before anything goes upstream. Used by test_proxy_malformed.py.

A kind is a name, the status it must get, and how to make it from a valid request of
either protocol (`build(api)` gives the method, path and raw body).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Api = str  # "openai" or "anthropic"
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
TOOL_KEY = {"openai": "parameters", "anthropic": "input_schema"}


def base(api: Api) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if api == "anthropic":
        body["max_tokens"] = 16
    return body


def tool(api: Api, name: str = "get_weather", schema: Any = None) -> dict[str, Any]:
    schema = (
        {"type": "object", "properties": {"city": {"type": "string"}}} if schema is None else schema
    )
    if api == "openai":
        return {"type": "function", "function": {"name": name, "parameters": schema}}
    return {"name": name, "input_schema": schema}


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Api], tuple[str, str, bytes]]
    status: int = 400

    def build(self, api: Api) -> tuple[str, str, bytes]:
        return self.make(api)


def _raw(
    text: Callable[[Api], bytes], method: str = "POST"
) -> Callable[[Api], tuple[str, str, bytes]]:
    return lambda api: (method, PATHS[api], text(api))


def _body(change: Callable[[Api, dict[str, Any]], Any]) -> Callable[[Api], tuple[str, str, bytes]]:
    def make(api: Api) -> tuple[str, str, bytes]:
        body = base(api)
        change(api, body)
        return "POST", PATHS[api], json.dumps(body).encode()

    return make


def _set(key: str, value: Any) -> Callable[[Api], tuple[str, str, bytes]]:
    return _body(lambda api, body: body.__setitem__(key, value))


def _splice(key: str, literal: str) -> Callable[[Api], tuple[str, str, bytes]]:
    """A field whose raw JSON text is `literal` (NaN, huge numbers, escapes)."""

    def make(api: Api) -> tuple[str, str, bytes]:
        text = json.dumps({**base(api), key: "@@"}).replace('"@@"', literal)
        return "POST", PATHS[api], text.encode()

    return make


def _tools(*tools: Callable[[Api], Any]) -> Callable[[Api], tuple[str, str, bytes]]:
    return _body(lambda api, body: body.__setitem__("tools", [t(api) for t in tools]))


def _schema(schema: Any) -> Callable[[Api], tuple[str, str, bytes]]:
    return _tools(lambda api: tool(api, schema=schema))


def _message(message: Any) -> Callable[[Api], tuple[str, str, bytes]]:
    return _body(lambda api, body: body.__setitem__("messages", [message]))


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _per_api(
    openai: Callable[[Api], tuple[str, str, bytes]],
    anthropic: Callable[[Api], tuple[str, str, bytes]],
) -> Callable[[Api], tuple[str, str, bytes]]:
    return lambda api: openai(api) if api == "openai" else anthropic(api)


def _without(key: str) -> Callable[[Api], tuple[str, str, bytes]]:
    return _body(lambda api, body: body.pop(key))


def _tool_result_for_unknown_call(api: Api, body: dict[str, Any]) -> None:
    if api == "openai":
        body["messages"].append({"role": "tool", "tool_call_id": "call_nowhere", "content": "x"})
    else:
        body["messages"].append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "nowhere", "content": "x"}],
            }
        )


def _many_messages(api: Api, body: dict[str, Any]) -> None:
    body["messages"] = [{"role": "user", "content": "x"}] * 100_001


BIG = 10 * 1024 * 1024

KINDS: tuple[Kind, ...] = (
    # -- the body as a whole
    Kind("not JSON", _raw(lambda api: b"{nope")),
    Kind("empty body", _raw(lambda api: b"")),
    Kind("JSON array body", _raw(lambda api: b"[]")),
    Kind("JSON string body", _raw(lambda api: b'"hi"')),
    Kind(
        "invalid UTF-8",
        _raw(lambda api: json.dumps(base(api)).encode().replace(b'"hi"', b'"h\xff\xfe"')),
    ),
    Kind("UTF-16 body", _raw(lambda api: json.dumps(base(api)).encode("utf-16"))),
    Kind("UTF-16 body without BOM", _raw(lambda api: json.dumps(base(api)).encode("utf-16-le"))),
    Kind("UTF-32 body", _raw(lambda api: json.dumps(base(api)).encode("utf-32"))),
    Kind(
        "Latin-1 body",
        _raw(lambda api: json.dumps(base(api)).replace("hi", "café").encode("latin-1")),
    ),
    Kind("10 MB body", _raw(lambda api: json.dumps({**base(api), "pad": "x" * BIG}).encode()), 413),
    Kind("100,000-deep nesting", _splice("metadata", _nested(100_000))),
    Kind("65-deep nesting", _splice("metadata", _nested(65))),
    Kind("100,001 messages", _body(_many_messages)),
    # -- numbers
    Kind("temperature NaN", _splice("temperature", "NaN")),
    Kind("temperature Infinity", _splice("temperature", "Infinity")),
    Kind("temperature -Infinity", _splice("temperature", "-Infinity")),
    Kind("temperature 1e999", _splice("temperature", "1e999")),
    Kind("temperature of 400 digits", _splice("temperature", "1" + "0" * 400)),
    Kind("temperature -1", _set("temperature", -1)),
    Kind("temperature 2.5", _set("temperature", 2.5)),
    Kind("temperature a string", _set("temperature", "hot")),
    Kind("temperature true", _set("temperature", True)),
    Kind("top_p 5", _set("top_p", 5)),
    Kind("top_p -0.1", _set("top_p", -0.1)),
    Kind("max_tokens -5", _set("max_tokens", -5)),
    Kind("max_tokens 0", _set("max_tokens", 0)),
    Kind("max_tokens 10^15", _set("max_tokens", 10**15)),
    Kind("max_tokens of 5,000 digits", _splice("max_tokens", "9" * 5000)),
    Kind("max_tokens 1.5", _set("max_tokens", 1.5)),
    Kind("max_tokens a string", _set("max_tokens", "100")),
    Kind("max_tokens true", _set("max_tokens", True)),
    Kind(
        "a protocol's own number out of range",
        _per_api(_set("max_completion_tokens", -1), _set("temperature", 1.5)),
    ),
    Kind("seed or max_tokens 2^70", _per_api(_set("seed", 2**70), _set("max_tokens", 2**70))),
    Kind("n 2 or system a number", _per_api(_set("n", 2), _set("system", 5))),
    # -- flags
    Kind("stream a string", _set("stream", "yes")),
    Kind("stream 1", _set("stream", 1)),
    Kind(
        "parallel tool flag a string",
        _per_api(
            _set("parallel_tool_calls", "no"),
            _set("tool_choice", {"type": "auto", "disable_parallel_tool_use": "no"}),
        ),
    ),
    # -- strings that cannot be encoded
    Kind(
        "lone surrogate in content",
        _splice("messages", '[{"role": "user", "content": "a\\ud800b"}]'),
    ),
    Kind("lone surrogate in model", _splice("model", '"m\\udfff"')),
    Kind("lone surrogate in a key", _splice("metadata", '{"k\\ud800": 1}')),
    # -- model and messages
    Kind("model missing", _without("model")),
    Kind("model a number", _set("model", 5)),
    Kind("messages missing", _without("messages")),
    Kind("messages empty", _set("messages", [])),
    Kind("messages an object", _set("messages", {"role": "user"})),
    Kind("message a string", _set("messages", ["hi"])),
    Kind("message without role", _message({"content": "hi"})),
    Kind("message of an unknown role", _message({"role": "wizard", "content": "hi"})),
    Kind("content a number", _message({"role": "user", "content": 5})),
    Kind(
        "content part of an unknown type",
        _message({"role": "user", "content": [{"type": "video"}]}),
    ),
    Kind("text part without text", _message({"role": "user", "content": [{"type": "text"}]})),
    Kind(
        "content part whose type is an array",
        _message({"role": "user", "content": [{"type": ["image_url"]}]}),
    ),
    Kind("tool result for an unknown call", _body(_tool_result_for_unknown_call)),
    Kind("stop a number", _per_api(_set("stop", 5), _set("stop_sequences", 5))),
    # -- tools
    Kind("tools an object", _set("tools", {"name": "x"})),
    Kind("tool a string", _set("tools", ["get_weather"])),
    Kind("tool properties [1]", _schema({"type": "object", "properties": [1]})),
    Kind("tool required 5", _schema({"type": "object", "required": 5})),
    Kind("tool type [string, 1]", _schema({"type": ["string", 1]})),
    Kind(
        "tool property type unknown",
        _schema({"type": "object", "properties": {"a": {"type": "text"}}}),
    ),
    Kind(
        "tool pattern not a regex",
        _schema({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}),
    ),
    Kind("tool schema of a string", _schema({"type": "string"})),
    Kind("tool schema a list", _schema([1, 2])),
    Kind(
        "tool 100-deep schema",
        _schema(json.loads('{"type": "object", "properties": {"a": ' * 50 + "{}" + "}}" * 50)),
    ),
    Kind(
        "tool without a name",
        _tools(
            lambda api: (
                {k: v for k, v in tool(api).items() if k != "name"}
                if api == "anthropic"
                else {"type": "function", "function": {"parameters": {}}}
            )
        ),
    ),
    Kind("tool name empty", _tools(lambda api: tool(api, name=""))),
    Kind("tool name with spaces", _tools(lambda api: tool(api, name="get the weather"))),
    Kind("duplicate tool names", _tools(tool, tool)),
    Kind(
        "tool_choice an unknown tool",
        _per_api(
            _body(
                lambda api, b: b.update(
                    tools=[tool(api)],
                    tool_choice={"type": "function", "function": {"name": "nope"}},
                )
            ),
            _body(
                lambda api, b: b.update(
                    tools=[tool(api)], tool_choice={"type": "tool", "name": "nope"}
                )
            ),
        ),
    ),
    Kind("tool_choice garbage", _set("tool_choice", 42)),
    Kind(
        "tool_choice required without tools",
        _per_api(_set("tool_choice", "required"), _set("tool_choice", {"type": "any"})),
    ),
    Kind(
        "tool_choice naming a tool without tools",
        _per_api(
            _set("tool_choice", {"type": "function", "function": {"name": "get_weather"}}),
            _set("tool_choice", {"type": "tool", "name": "get_weather"}),
        ),
    ),
    Kind(
        "tool schema with a dangling $ref",
        _schema({"type": "object", "properties": {"city": {"$ref": "#/$defs/Missing"}}}),
    ),
    Kind(
        "output schema invalid",
        _per_api(
            _set(
                "response_format",
                {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": 5}}},
            ),
            _set("output_config", {"format": {"type": "json_schema", "schema": {"type": 5}}}),
        ),
    ),
    # -- routes and methods
    Kind("GET on the endpoint", lambda api: ("GET", PATHS[api], b""), 405),
    Kind(
        "PUT on the endpoint", lambda api: ("PUT", PATHS[api], json.dumps(base(api)).encode()), 405
    ),
    Kind("DELETE on the endpoint", lambda api: ("DELETE", PATHS[api], b""), 405),
    Kind(
        "unknown path",
        lambda api: ("POST", PATHS[api] + "/extra", json.dumps(base(api)).encode()),
        404,
    ),
)


def openai_shaped(body: Any) -> bool:
    error = body.get("error") if isinstance(body, dict) else None
    return (
        isinstance(error, dict)
        and set(error) == {"message", "type", "param", "code"}
        and isinstance(error["message"], str)
        and bool(error["message"])
        and isinstance(error["type"], str)
    )


def anthropic_shaped(body: Any) -> bool:
    if not isinstance(body, dict) or body.get("type") != "error":
        return False
    error = body.get("error")
    return (
        isinstance(error, dict)
        and set(error) == {"type", "message"}
        and isinstance(error["message"], str)
        and bool(error["message"])
    )


def shaped(api: Api, body: Any) -> bool:
    """Whether `body` is an error in `api`'s own shape."""
    return openai_shaped(body) if api == "openai" else anthropic_shaped(body)


# Every route that decodes a request body, and the protocol its errors speak.
ROUTES: dict[str, tuple[str, Api]] = {
    "chat": ("/v1/chat/completions", "openai"),
    "responses": ("/v1/responses", "openai"),
    "messages": ("/v1/messages", "anthropic"),
    "count_tokens": ("/v1/messages/count_tokens", "anthropic"),
}


def route_body(route: str, **fields: Any) -> dict[str, Any]:
    """A valid request body of `route`, with `fields` set."""
    if route == "responses":
        body: dict[str, Any] = {"model": "m", "input": "hi"}
    else:
        body = base(ROUTES[route][1])
        if route == "count_tokens":
            body.pop("max_tokens")
    return {**body, **fields}


def route_tool(route: str, name: str = "get_weather", schema: Any = None) -> dict[str, Any]:
    """A function tool as `route` declares one."""
    if route != "responses":
        return tool(ROUTES[route][1], name, schema)
    flat = tool("openai", name, schema)["function"]
    return {"type": "function", **flat}
