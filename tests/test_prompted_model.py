"""The prompted backend on a real model: SmolLM2-135M through a real llama.cpp server.

Protocol facts only (a call came, to which tool, with arguments that fit the schema;
no call under `none`), never wording. Few requests, small `max_tokens`, temperature 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from parlay import GenerationOptions, Session
from parlay.backends.base import Backend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.events import Finish, ScoredTextDelta, TextDelta, ToolCallEnd
from parlay.request import ChatRequest, ToolChoice, ToolSpec
from parlay.start import EMBEDDED_ACTION_FORMAT, EMBEDDED_MIN_CALL_CONFIDENCE

pytestmark = pytest.mark.model

OPTIONS = GenerationOptions(temperature=0, max_tokens=60)

USER_ID = ToolSpec(
    "get_user_id",
    "Look up the numeric id of a user by name.",
    {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The user's name"}},
        "required": ["name"],
    },
)
ORDERS = ToolSpec(
    "get_orders",
    "List the orders of a user, by user id.",
    {
        "type": "object",
        "properties": {"user_id": {"type": "integer", "description": "The user's id"}},
        "required": ["user_id"],
    },
)


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
    """
    return f"Sunny and 21 C in {city}."


def embedded(backend: Backend, **settings: Any) -> PromptedBackend:
    """The engine as the embedded session runs SmolLM2 (at its own call confidence, in
    its own format where a grammar holds it)."""
    if settings.get("constrained") is not False:
        settings.setdefault("action_format", EMBEDDED_ACTION_FORMAT)
    return PromptedBackend(backend, min_call_confidence=EMBEDDED_MIN_CALL_CONFIDENCE, **settings)


async def collect(backend: PromptedBackend, request: ChatRequest) -> tuple[list[ToolCall], Finish]:
    calls = []
    finish = None
    async for event in backend.stream(request):
        if isinstance(event, ToolCallEnd):
            calls.append(event.call)
        elif isinstance(event, Finish):
            finish = event
    assert finish is not None and finish.diagnostics is not None
    return calls, finish


async def test_single_call_through_a_session(llama_backend) -> None:
    session = Session(embedded(llama_backend), tools=[get_weather], options=OPTIONS)
    thunk = await session.chat("What is the weather in Paris?")
    assert [call.name for call in thunk.tools] == ["get_weather"]
    assert isinstance(thunk.tools[0].arguments.get("city"), str)
    assert thunk.finish_reason == "tool_calls"
    assert thunk.diagnostics.contract_injected and thunk.diagnostics.calls_parsed == 1


async def test_two_step_chain_uses_the_first_result(llama_backend) -> None:
    backend = embedded(llama_backend)
    tools = (USER_ID, ORDERS)
    question = UserMessage("Show me the orders of the user named Alice.")
    first, finish = await collect(
        backend, ChatRequest((question,), tools, ToolChoice("required"), options=OPTIONS)
    )
    assert [c.name for c in first] == ["get_user_id"]
    assert finish.diagnostics.constrained  # llama.cpp takes a JSON-schema grammar
    history = (
        question,
        AssistantMessage("", (first[0],)),
        ToolResult(first[0].id, "get_user_id", '{"user_id": 4711}'),
    )
    second, finish = await collect(
        backend, ChatRequest(history, tools, ToolChoice("required"), options=OPTIONS)
    )
    assert [c.name for c in second] == ["get_orders"]
    assert second[0].arguments == {"user_id": 4711}
    assert finish.diagnostics.tool_history_detected
    assert finish.diagnostics.tool_state == "result_received"


async def test_tool_choice_none_gives_no_call(llama_backend) -> None:
    backend = embedded(llama_backend)
    request = ChatRequest(
        (UserMessage("What is the weather in Paris?"),),
        (USER_ID, ORDERS, ToolSpec("get_weather", "Get the weather for a city.")),
        ToolChoice("none"),
        options=OPTIONS,
    )
    calls, finish = await collect(backend, request)
    assert calls == [] and finish.reason != "tool_calls"


async def test_required_gives_a_call_without_a_grammar(llama_backend) -> None:
    # Unconstrained, so the retry policy is what guarantees the call when the model
    # answers in prose first; each retry is visible in the diagnostics with its reason.
    backend = embedded(llama_backend, constrained=False)
    request = ChatRequest(
        (UserMessage("Alice"),), (USER_ID, ORDERS), ToolChoice("required"), options=OPTIONS
    )
    calls, finish = await collect(backend, request)
    diagnostics = finish.diagnostics
    assert not diagnostics.constrained
    assert len(calls) >= 1 or len(diagnostics.retries) == backend.max_retries
    assert all(
        r.reason in {"no_call", "refusal", "unreadable", "unknown_tool", "invalid_arguments"}
        for r in diagnostics.retries
    )
    if calls:
        assert calls[0].name in {"get_user_id", "get_orders"}
        assert finish.reason == "tool_calls"


async def test_the_server_reports_the_alternatives_the_model_weighed(llama_backend) -> None:
    request = ChatRequest(
        (UserMessage("Say hello."),),
        options=GenerationOptions(temperature=0, max_tokens=8, top_logprobs=3),
    )
    deltas = [e async for e in llama_backend.stream(request) if isinstance(e, TextDelta)]
    assert deltas and all(isinstance(d, ScoredTextDelta) for d in deltas)
    for delta in deltas:
        assert "".join(t.token for t in delta.tokens) == delta.text
        assert all(1 <= len(t.top) <= 3 for t in delta.tokens)


SUM = ToolSpec(
    "calculate_sum",
    "Calculates the sum of two numbers and returns the result.",
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)


async def test_a_call_the_grammar_forced_becomes_an_answer(llama_backend) -> None:
    # BFCL live_irrelevance_775-284-0: a forecast asked for, only an adder offered. Under
    # the grammar SmolLM2 writes `calculate_sum` with the coordinates, while at the name
    # it leans to `fetch`; the engine reads that and asks for an answer instead.
    question = (
        "Can you fetch me the weather data for the coordinates 37.8651 N, 119.5383 W, "
        "including the hourly forecast for temperature, wind speed, and precipitation "
        "for the next 10 days"
    )
    request = ChatRequest((UserMessage(question),), (SUM,), options=OPTIONS)
    calls, finish = await collect(embedded(llama_backend), request)
    assert calls == []
    assert [r.reason for r in finish.diagnostics.retries][:1] == ["forced_call"]
    assert finish.diagnostics.retries[0].detail.startswith("calculate_sum: ")


WEATHER = ToolSpec(
    "get_current_weather",
    "Retrieves the current weather conditions for a specified city and state.",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "'City, State', or 'City, Country'"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["location"],
    },
)


async def test_a_name_the_model_left_halfway_is_read_at_every_token(llama_backend) -> None:
    # BFCL live_irrelevance_100-2-88: VirusTotal data asked for, only a weather tool
    # offered. SmolLM2 is sure of `get` (most tools begin so), and after `get_` leans to
    # `v`: the first token alone would let the grammar's `get_current_weather` through.
    question = (
        "I need details from VirusTotal for the domain reddit.com. "
        "My given API key is reddit_api_key."
    )
    request = ChatRequest((UserMessage(question),), (WEATHER,), options=OPTIONS)
    calls, finish = await collect(embedded(llama_backend), request)
    assert calls == []
    [first, *_] = finish.diagnostics.retries
    assert first.reason == "forced_call"
    assert first.detail.startswith("get_current_weather: after 'get")


async def test_a_callers_schema_with_nested_models_is_held_by_the_real_grammar(
    llama_backend,
) -> None:
    # llama.cpp reads `$ref: #/$defs/...` from the root of the whole schema: left inside
    # the answer's option it refused the grammar (HTTP 400) and the engine ran without one.
    from pydantic import BaseModel

    from parlay.request import ResponseFormat

    class Address(BaseModel):
        city: str

    class Person(BaseModel):
        name: str
        home: Address

    request = ChatRequest(
        (UserMessage("Ada lives in London. Describe her as JSON."),),
        tools=(USER_ID,),
        response_format=ResponseFormat(Person.model_json_schema(), name="person"),
        options=OPTIONS,
    )
    _, finish = await collect(embedded(llama_backend), request)
    assert finish.diagnostics.constrained
    assert not any("rejected the action schema" in note for note in finish.diagnostics.notes)
