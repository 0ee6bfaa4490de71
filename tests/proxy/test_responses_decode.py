"""Decoding `POST /v1/responses`: each input form and tool_choice, the fields refused
because the proxy keeps no state, malformed bodies, and tools that are not functions."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from parlay import AssistantMessage, ScriptedBackend, ToolCall
from parlay.context import SystemMessage, ToolResult, UserMessage
from parlay.errors import InvalidRequestError
from parlay.request import ResponseFormat, ToolChoice
from parlay.server import create_app
from parlay.wire.responses_request import decode_request

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = {"type": "function", "name": "get_weather", "parameters": SCHEMA, "strict": True}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    "tools": [
        {"type": "function", "name": "spawn_agent", "parameters": SCHEMA},
        {"type": "function", "name": "get_weather", "description": "the namespace's own"},
    ],
}
HOSTED: list[dict[str, Any]] = [
    {"type": "web_search"},
    {"type": "web_search_preview"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "local_shell"},
    {"type": "shell"},
    {"type": "apply_patch"},
    {"type": "custom", "name": "apply_patch", "format": {"type": "text"}},
    {"type": "computer_use_preview", "display_width": 1, "display_height": 1},
    {"type": "mcp", "server_label": "deepwiki", "server_url": "https://x"},
    {"type": "image_generation"},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "tool_search"},
    {"type": "a_tool_of_next_year", "name": "späť\r\nx-evil: 1"},
]


def decode(**body: Any) -> Any:
    return decode_request({"model": "m", "input": "hi", **body})


# -- input forms -------------------------------------------------------------------------


def test_a_string_input_is_one_user_message() -> None:
    assert decode(input="hi").chat.messages == (UserMessage("hi"),)


def test_instructions_come_first_as_a_system_message() -> None:
    messages = decode(instructions="Be brief.", input="hi").chat.messages
    assert messages == (SystemMessage("Be brief."), UserMessage("hi"))


def test_every_role_and_content_form() -> None:
    items = [
        {"role": "developer", "content": "dev rules"},
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "sys"}]},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
        {"role": "assistant", "content": "plain"},
    ]
    assert decode(input=items).chat.messages == (
        SystemMessage("dev rules"),
        SystemMessage("sys"),
        UserMessage("ab"),
        AssistantMessage("ok"),
        AssistantMessage("plain"),
    )


def test_calls_join_the_assistant_text_before_them_and_results_follow() -> None:
    items = [
        {"role": "user", "content": "weather?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking."}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "get_weather",
            "arguments": '{"city":"Oslo"}',
            "status": "completed",
            "id": "fc_2",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [{"type": "input_text", "text": "rain"}],
        },
    ]
    messages = decode(input=items, tools=[WEATHER]).chat.messages
    assert messages == (
        UserMessage("weather?"),
        AssistantMessage(
            "Checking.",
            (
                ToolCall("get_weather", {"city": "Paris"}, "c1"),
                ToolCall("get_weather", {"city": "Oslo"}, "c2"),
            ),
        ),
        ToolResult("c1", "get_weather", "sunny"),
        ToolResult("c2", "get_weather", "rain"),
    )


def test_reasoning_and_hosted_tool_items_are_left_out() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "compaction", "encrypted_content": "x"},
    ]
    assert decode(input=items).chat.messages == (UserMessage("q"),)


# -- tools and tool_choice ---------------------------------------------------------------


def test_function_tools_are_offered_and_strict_accepted() -> None:
    specs = decode(tools=[WEATHER]).chat.tools
    assert [(s.name, s.parameters) for s in specs] == [("get_weather", SCHEMA)]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ToolChoice("auto")),
        ("auto", ToolChoice("auto")),
        ("none", ToolChoice("none")),
        ("required", ToolChoice("required")),
        ({"type": "function", "name": "get_weather"}, ToolChoice("tool", "get_weather")),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "spawn_agent"}],
            },
            ToolChoice("required"),
        ),
    ],
)
def test_every_tool_choice_form(raw: Any, expected: ToolChoice) -> None:
    assert decode(tools=[WEATHER, AGENTS], tool_choice=raw).chat.tool_choice == expected


def test_allowed_tools_narrow_what_the_model_is_offered() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [
            {"type": "function", "name": "spawn_agent"},
            {"type": "mcp", "server_label": "x"},
        ],
    }
    assert [s.name for s in decode(tools=[WEATHER, AGENTS], tool_choice=choice).chat.tools] == [
        "spawn_agent"
    ]


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "function", "name": "nope"},
        {"type": "web_search"},
        {"type": "custom", "name": "apply_patch"},
        {"type": "allowed_tools", "mode": "required", "tools": [{"type": "mcp"}]},
        "sometimes",
        7,
    ],
)
def test_a_tool_choice_that_cannot_be_honoured_is_refused(raw: Any) -> None:
    with pytest.raises(InvalidRequestError):
        decode(tools=[WEATHER], tool_choice=raw)


def test_namespace_functions_are_offered_under_their_own_names_and_a_clash_is_qualified() -> None:
    decoded = decode(tools=[WEATHER, AGENTS, *HOSTED])
    assert [s.name for s in decoded.chat.tools] == [
        "get_weather",
        "spawn_agent",
        "multi_agent_v1.get_weather",
    ]
    assert decoded.layout.namespaced == {
        "spawn_agent": ("multi_agent_v1", "spawn_agent"),
        "multi_agent_v1.get_weather": ("multi_agent_v1", "get_weather"),
    }


def test_a_namespaced_call_in_the_history_is_read_back_under_its_offered_name() -> None:
    items = [
        {"role": "user", "content": "go"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "namespace": "multi_agent_v1",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
    ]
    messages = decode(input=items, tools=[WEATHER, AGENTS]).chat.messages
    assert messages[1] == AssistantMessage("", (ToolCall("multi_agent_v1.get_weather", {}, "c1"),))
    assert messages[2] == ToolResult("c1", "multi_agent_v1.get_weather", "done")


def test_hosted_tools_are_not_offered_and_are_named() -> None:
    decoded = decode(tools=[WEATHER, *HOSTED])
    assert [s.name for s in decoded.chat.tools] == ["get_weather"]
    assert decoded.layout.not_offered[:3] == ("web_search", "web_search_preview", "file_search")
    assert "custom:apply_patch" in decoded.layout.not_offered
    assert "mcp:deepwiki" in decoded.layout.not_offered


def test_a_custom_tool_inside_a_namespace_is_named_with_its_namespace() -> None:
    space = {**AGENTS, "tools": [*AGENTS["tools"], {"type": "custom", "name": "patch"}]}
    assert decode(tools=[space]).layout.not_offered == ("multi_agent_v1.custom:patch",)


# -- options -------------------------------------------------------------------------------


def test_generation_options_and_parallel_calls() -> None:
    chat = decode(max_output_tokens=50, temperature=0.2, top_p=0.9, parallel_tool_calls=False).chat
    assert (chat.options.max_tokens, chat.options.temperature, chat.options.top_p) == (50, 0.2, 0.9)
    assert chat.parallel_tool_calls is False


def test_text_format_json_schema_is_structured_output_with_or_without_tools() -> None:
    text = {
        "format": {"type": "json_schema", "name": "city", "schema": SCHEMA, "strict": True},
        "verbosity": "low",
    }
    assert decode(text=text).chat.response_format == ResponseFormat(SCHEMA, "city", True)
    with_tools = decode(text=text, tools=[WEATHER]).chat
    assert with_tools.response_format == ResponseFormat(SCHEMA, "city", True)
    assert [s.name for s in with_tools.tools] == ["get_weather"]
    assert decode(text={"format": {"type": "json_object"}}).chat.response_format is not None
    assert decode(text={"format": {"type": "text"}}).chat.response_format is None
    assert decode(text={"verbosity": "low"}).chat.response_format is None


def test_harmless_fields_and_unknown_ones_are_accepted() -> None:
    decoded = decode(
        reasoning={"effort": "low", "summary": "auto"},
        include=["reasoning.encrypted_content"],
        prompt_cache_key="k",
        client_metadata={"a": "b"},
        store=False,
        metadata={"x": "y"},
        user="u",
        truncation="auto",
        service_tier="auto",
        safety_identifier="s",
        max_tool_calls=3,
        stream_options={"include_obfuscation": False},
        some_field_of_next_year={"anything": 1},
    )
    assert decoded.chat.messages == (UserMessage("hi"),)


# -- over HTTP: refusals, malformed bodies, hosted tools -------------------------------------


def scripted() -> ScriptedBackend:
    return ScriptedBackend(lambda request: "Fine.")


async def post(backend: ScriptedBackend, body: Any, path: str = "/v1/responses") -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    transport = httpx.ASGITransport(create_app(backend))
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        return await client.post(path, content=raw)


def openai_shaped(body: Any) -> bool:
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and isinstance(error.get("message"), str) and "type" in error


STATEFUL = [
    {"previous_response_id": "resp_123"},
    {"store": True},
    {"conversation": "conv_1"},
    {"conversation": {"id": "conv_1"}},
    {"prompt": {"id": "pmpt_1"}},
    {"background": True},
    {"input": [{"type": "item_reference", "id": "msg_1"}]},
]


@pytest.mark.parametrize("fields", STATEFUL, ids=lambda f: next(iter(f)))
async def test_stateful_fields_are_refused_saying_the_proxy_keeps_no_state(fields: Any) -> None:
    backend = scripted()
    r = await post(backend, {"model": "m", "input": "hi", **fields})
    assert r.status_code == 400
    assert openai_shaped(r.json())
    assert "keeps no state" in r.json()["error"]["message"]
    assert backend.requests == []


async def test_store_false_or_left_out_is_served() -> None:
    for store in ({}, {"store": False}):
        r = await post(scripted(), {"model": "m", "input": "hi", **store})
        assert r.status_code == 200, r.text
        assert r.json()["store"] is False


MALFORMED: list[tuple[str, Any]] = [
    ("not json", b"{"),
    ("an array body", []),
    ("no model", {"input": "hi"}),
    ("no input", {"model": "m"}),
    ("input a number", {"model": "m", "input": 3}),
    ("an empty input", {"model": "m", "input": []}),
    ("an item not an object", {"model": "m", "input": ["hi"]}),
    ("an unknown item", {"model": "m", "input": [{"type": "hologram"}]}),
    ("a tool role", {"model": "m", "input": [{"role": "tool", "content": "x"}]}),
    (
        "an image part whose URL is neither http(s) nor data:",
        {
            "model": "m",
            "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}],
        },
    ),
    (
        "a result of no call",
        {"model": "m", "input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]},
    ),
    (
        "a call without a name",
        {"model": "m", "input": [{"type": "function_call", "call_id": "c1", "arguments": "{}"}]},
    ),
    (
        "arguments not a string",
        {
            "model": "m",
            "input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": 3}],
        },
    ),
    ("temperature 9", {"model": "m", "input": "hi", "temperature": 9}),
    ("max_output_tokens 0", {"model": "m", "input": "hi", "max_output_tokens": 0}),
    ("instructions a number", {"model": "m", "input": "hi", "instructions": 5}),
    ("tools an object", {"model": "m", "input": "hi", "tools": {"type": "function"}}),
    ("a tool without a name", {"model": "m", "input": "hi", "tools": [{"type": "function"}]}),
    (
        "a tool schema not JSON Schema",
        {"model": "m", "input": "hi", "tools": [{**WEATHER, "parameters": {"type": 5}}]},
    ),
    ("two tools of one name", {"model": "m", "input": "hi", "tools": [WEATHER, WEATHER]}),
    (
        "a namespace without tools list",
        {"model": "m", "input": "hi", "tools": [{"type": "namespace", "name": "n", "tools": "x"}]},
    ),
    (
        "a namespace without name",
        {"model": "m", "input": "hi", "tools": [{"type": "namespace", "tools": [WEATHER]}]},
    ),
    (
        "text.format json_schema without schema",
        {"model": "m", "input": "hi", "text": {"format": {"type": "json_schema", "name": "x"}}},
    ),
    (
        "text.format of an unknown type",
        {"model": "m", "input": "hi", "text": {"format": {"type": "yaml"}}},
    ),
    ("an item whose type is an array", {"model": "m", "input": [{"type": ["message"]}]}),
    ("a tool whose name is an array", {"model": "m", "input": "hi", "tools": [{"name": ["a"]}]}),
    ("stream a string", {"model": "m", "input": "hi", "stream": "yes"}),
    ("store a string", {"model": "m", "input": "hi", "store": "no"}),
    ("deep nesting", {"model": "m", "input": "hi", "metadata": json.loads("[" * 100 + "]" * 100)}),
]


@pytest.mark.parametrize(("name", "body"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_a_malformed_request_gets_a_400_in_openai_shape_and_no_upstream_call(
    name: str, body: Any
) -> None:
    backend = scripted()
    r = await post(backend, body)
    assert r.status_code == 400, r.text[:300]
    assert r.headers["content-type"] == "application/json"
    assert openai_shaped(r.json()), r.text[:300]
    assert backend.requests == []


@pytest.mark.parametrize("stream", [False, True])
async def test_hosted_tools_never_fail_the_request_and_are_named_in_a_header(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    backend = scripted()
    body = {"model": "m", "input": "hi", "tools": [WEATHER, AGENTS, *HOSTED], "stream": stream}
    with caplog.at_level(logging.DEBUG, logger="parlay.server"):
        r = await post(backend, body)
    assert r.status_code == 200, r.text[:300]
    header = r.headers["x-parlay-tools-not-offered"]
    assert header.startswith("web_search, web_search_preview, file_search, local_shell")
    assert "mcp:deepwiki" in header and "custom:apply_patch" in header
    assert header.isascii() and "\n" not in header and "\r" not in header
    assert "web_search" in caplog.text
    offered = [s.name for s in backend.requests[0].tools]
    assert offered == ["get_weather", "spawn_agent", "multi_agent_v1.get_weather"]


async def test_no_header_when_every_tool_is_offered() -> None:
    r = await post(scripted(), {"model": "m", "input": "hi", "tools": [WEATHER]})
    assert "x-parlay-tools-not-offered" not in r.headers


async def test_the_bare_path_is_served_and_an_unknown_one_names_the_responses_route() -> None:
    r = await post(scripted(), {"model": "m", "input": "hi"}, path="/responses")
    assert r.status_code == 200 and r.json()["object"] == "response"
    r = await post(scripted(), {"model": "m", "input": "hi"}, path="/v1/respond")
    assert r.status_code == 404
    assert "POST /v1/responses" in r.json()["error"]["message"]


# -- the requests the clients sent (shared/clients.md), which got a 404 --------------

EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}
CODEX_BODY: dict[str, Any] = {
    "model": "gpt-5-codex",
    "instructions": "You are Codex.",
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "sandbox rules"}],
        },
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "more rules"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context/>"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "run echo hi"}],
        },
    ],
    "tools": [
        EXEC,
        {**EXEC, "name": "write_stdin"},
        {**EXEC, "name": "view_image"},
        {
            "type": "namespace",
            "name": "multi_agent_v1",
            "description": "agents",
            "tools": [{**EXEC, "name": "spawn_agent"}],
        },
        {"type": "web_search", "external_web_access": False},
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "0199-thread",
    "client_metadata": {"originator": "codex_exec"},
}


async def test_codex_cli_request_is_served_not_404() -> None:
    backend = ScriptedBackend(
        lambda request: ToolCall("exec_command", {"cmd": "echo hi"}, "call_1")
    )
    r = await post(backend, CODEX_BODY)
    assert r.status_code == 200, r.text[:300]
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-parlay-tools-not-offered"] == "web_search"
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "response.completed"
    (call,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert (call["name"], json.loads(call["arguments"])) == ("exec_command", {"cmd": "echo hi"})
    seen = backend.requests[0]
    assert [type(m).__name__ for m in seen.messages] == [
        "SystemMessage",
        "SystemMessage",
        "SystemMessage",
        "UserMessage",
        "UserMessage",
    ]
    assert seen.parallel_tool_calls is False
    assert [s.name for s in seen.tools] == [
        "exec_command",
        "write_stdin",
        "view_image",
        "spawn_agent",
    ]


async def test_openai_agents_default_model_request_is_served_not_404() -> None:
    body = {
        "model": "m",
        "instructions": "You are helpful.",
        "input": [{"role": "user", "content": "hi"}],
        "tools": [{**EXEC, "strict": True}],
        "include": [],
        "reasoning": {"effort": "low"},
        "text": {"verbosity": "low"},
    }
    r = await post(scripted(), body)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["output"][0]["content"][0]["text"] == "Fine."


# -- anything a client sends: a 400 or a request, never another exception -------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
ITEM_TYPES = st.sampled_from(
    ["message", "function_call", "function_call_output", "reasoning", "item_reference", "x"]
)
ITEMS = st.fixed_dictionaries(
    {"type": ITEM_TYPES | JSON_VALUES},
    optional={
        "role": st.sampled_from(["user", "assistant", "developer", "system", "tool"]),
        "content": JSON_VALUES,
        "call_id": st.sampled_from(["c1", "c2"]) | JSON_VALUES,
        "name": st.sampled_from(["get_weather", "spawn_agent"]) | JSON_VALUES,
        "namespace": st.sampled_from(["multi_agent_v1"]) | JSON_VALUES,
        "arguments": st.sampled_from(['{"city": "x"}', "{", ""]) | JSON_VALUES,
        "output": JSON_VALUES,
    },
)
TOOLS = st.sampled_from([WEATHER, AGENTS, *HOSTED]) | JSON_VALUES


@given(
    input=st.lists(ITEMS, max_size=6) | JSON_VALUES,
    tools=st.lists(TOOLS, max_size=4) | JSON_VALUES,
    tool_choice=st.sampled_from(["auto", "required", {"type": "function", "name": "get_weather"}])
    | JSON_VALUES,
    text=JSON_VALUES,
    extra=st.dictionaries(
        st.sampled_from(["store", "instructions", "temperature", "max_output_tokens", "stream"]),
        JSON_VALUES,
        max_size=3,
    ),
)
def test_any_body_decodes_or_is_a_400_never_another_exception(
    input: Any, tools: Any, tool_choice: Any, text: Any, extra: dict[str, Any]
) -> None:
    body = {"model": "m", "input": input, "tools": tools, "tool_choice": tool_choice, "text": text}
    try:
        decoded = decode_request({**body, **extra})
    except InvalidRequestError:
        return
    assert decoded.chat.messages
    assert all(spec.name for spec in decoded.chat.tools)
