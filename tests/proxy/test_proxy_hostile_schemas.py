"""Tool schemas a client may send (valid JSON Schema at its strangest: references to
themselves and to nothing, every combinator, impossible bounds, patterns that backtrack)
and replies a model may write against them (any arguments, in every action shape),
through the whole app, in every protocol and mode: never a 5xx, a refusal in the
client's protocol, no call to a tool the client did not offer, none under "none".

The malformed-request catalogue (`malformed.py`) names what each refusal says; this
searches the space between them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from malformed import shaped

from parlay import Capabilities, PromptedBackend, ScriptedBackend, ToolCall
from parlay.server import create_app

NAMES = st.sampled_from(["a", "b", "x y", "", "$ref", "type", "ü", "a" * 300])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
LEAVES = st.one_of(
    st.just({}),
    st.booleans(),
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "null"])}),
    st.fixed_dictionaries(
        {"type": st.lists(st.sampled_from(["string", "null", "object"]), min_size=1, unique=True)}
    ),
    st.fixed_dictionaries({"enum": st.lists(SCALARS | st.lists(SCALARS, max_size=2), min_size=1)}),
    st.fixed_dictionaries({"const": SCALARS}),
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "pattern": st.sampled_from(["(a+)+$", "\\d{2,}", ".*"]),
            "format": st.sampled_from(["date-time", "email", "weird"]),
            "minLength": st.integers(0, 10**6),
            "maxLength": st.integers(0, 5),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": st.integers(-(10**30), 10**30), "maximum": st.integers(-5, 5)},
    ),
    st.fixed_dictionaries(
        {"$ref": st.sampled_from(["#/$defs/a", "#/$defs/missing", "#", "#/properties/a"])}
    ),
)


def _branches(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(NAMES, children, max_size=3)},
            optional={
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": st.booleans() | children,
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": children},
            optional={"minItems": st.integers(0, 10**6), "maxItems": st.integers(0, 3)},
        ),
        *(
            st.fixed_dictionaries({key: st.lists(children, min_size=1, max_size=3)})
            for key in ("anyOf", "oneOf", "allOf")
        ),
        st.fixed_dictionaries({"not": children}),
        st.fixed_dictionaries({"if": children, "then": children, "else": children}),
    )


INNER = st.recursive(LEAVES, _branches, max_leaves=15)
SCHEMAS = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(NAMES, INNER, max_size=3),
        "required": st.lists(NAMES, max_size=3, unique=True),
        "$defs": st.dictionaries(st.just("a"), INNER, max_size=1),
    }
)
ARGUMENTS = st.recursive(
    SCALARS,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(NAMES, c, max_size=3),
    max_leaves=20,
)
REPLIES = {
    "typed": '{{"type": "tool_call", "tool": {{"tool_name": "t0", "arguments": {0}}}}}',
    "json": '{{"thought": "t", "action": {{"tool": "t0", "args": {0}}}}}',
    "fenced": 'Sure.\n```json action\n{{"tool": "t0", "parameters": {0}}}\n```',
    "unoffered": '{{"tool": "t9", "parameters": {0}}}',
    "text": "It is {0}",
}
CHOICES = ("auto", "required", "none", "t0")
reply: list[str | ToolCall] = [""]  # what the scripted model writes next (one example at a time)


def _model_reply(mode: str, shape: str, arguments: Any) -> str | ToolCall:
    """The reply in `shape`: a text the prompted engine reads, or a native call."""
    if mode == "prompted" or shape == "text":
        return REPLIES[shape].format(json.dumps(arguments))
    named = arguments if isinstance(arguments, dict) else {"value": arguments}
    return ToolCall("t9" if shape == "unoffered" else "t0", named)


def _app(mode: str) -> Any:
    caps = Capabilities(native_tools=mode == "native", json_schema=True)
    inner = ScriptedBackend(lambda request: reply[0], capabilities=caps)
    return create_app(inner if mode == "native" else PromptedBackend(inner))


APPS = {mode: _app(mode) for mode in ("native", "prompted")}


ASK = [{"role": "user", "content": "hi"}]


def _body(api: str, schemas: list[Any], choice: str, stream: bool) -> tuple[str, dict[str, Any]]:
    """The request of `api` offering tools t0, t1, ... with these schemas."""
    named = [(f"t{i}", schema) for i, schema in enumerate(schemas)]
    body: dict[str, Any]
    if api == "chat":
        tools = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in named]
        pick: Any = {"type": "function", "function": {"name": "t0"}}
        path, body = "/v1/chat/completions", {"messages": ASK}
    elif api == "responses":
        tools = [{"type": "function", "name": n, "parameters": s} for n, s in named]
        pick, path, body = {"type": "function", "name": "t0"}, "/v1/responses", {"input": "hi"}
    else:
        tools = [{"name": n, "input_schema": s} for n, s in named]
        kinds = {"auto": "auto", "required": "any", "none": "none"}
        pick, path = {"type": "tool", "name": "t0"}, "/v1/messages"
        body = {"messages": ASK, "max_tokens": 64}
        pick = pick if choice == "t0" else {"type": kinds[choice]}
    chosen = pick if choice == "t0" or api == "messages" else choice
    return path, {**body, "model": "m", "stream": stream, "tools": tools, "tool_choice": chosen}


def _called(data: dict[str, Any]) -> list[str]:
    """The tools a whole (not streamed) reply of any protocol calls."""
    message = (data.get("choices") or [{}])[0].get("message") or {}
    names = [c["function"]["name"] for c in message.get("tool_calls") or []]
    names += [b["name"] for b in data.get("content") or [] if b.get("type") == "tool_use"]
    return names + [b["name"] for b in data.get("output") or [] if b.get("type") == "function_call"]


async def _post(mode: str, path: str, body: dict[str, Any]) -> httpx.Response:
    transport = httpx.ASGITransport(APPS[mode])
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        return await asyncio.wait_for(client.post(path, json=body), 30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schemas=st.lists(SCHEMAS, min_size=1, max_size=2),
    mode=st.sampled_from(sorted(APPS)),
    api=st.sampled_from(["chat", "messages", "responses"]),
    choice=st.sampled_from(CHOICES),
    stream=st.booleans(),
    arguments=ARGUMENTS,
    shape=st.sampled_from(sorted(REPLIES)),
)
def test_hostile_schemas_and_arguments_never_get_a_5xx_or_an_unoffered_call(
    schemas: list[Any], mode: str, api: str, choice: str, stream: bool, arguments: Any, shape: str
) -> None:
    reply[0] = _model_reply(mode, shape, arguments)
    path, body = _body(api, schemas, choice, stream)
    answer = asyncio.run(_post(mode, path, body))
    assert answer.status_code < 500, answer.text[:500]
    if answer.status_code >= 400:
        assert shaped("anthropic" if api == "messages" else "openai", answer.json()), answer.text
    elif not stream:
        called = _called(answer.json())
        assert set(called) <= {f"t{i}" for i in range(len(schemas))}, called
        assert not (called and choice == "none"), called
    else:
        assert '"api_error"' not in answer.text and '"server_error"' not in answer.text
