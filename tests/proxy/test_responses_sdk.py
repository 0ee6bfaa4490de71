"""The official `openai` SDK's Responses client against the proxy on uvicorn: a whole
tool round trip (call, function_call_output, answer) in native and prompted mode,
streaming and not, in front of the stub upstream (which writes native calls, or the
prompt engine's action text); structured output, namespaced tools and errors over a
scripted backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from proxy_harness import RunningServer, running
from proxy_stub import ANSWER, RESULT, StubUpstream
from pydantic import BaseModel

from parlay import (
    AssistantMessage,
    Capabilities,
    OpenAIBackend,
    PromptedBackend,
    ScriptedBackend,
    ToolCall,
)
from parlay.server import create_app

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
QUESTION = "What is the weather in Paris?"
LIFECYCLE_HEAD = ["response.created", "response.in_progress", "response.output_item.added"]


def backend_for(stub: StubUpstream, mode: str, model: str = "turns") -> Any:
    native = mode == "native"
    inner = OpenAIBackend(
        model,
        base_url=stub.base_url,
        api_key="sk-upstream",
        capabilities=Capabilities(native_tools=native, json_schema=True),
    )
    return inner if native else PromptedBackend(inner)


@pytest.fixture(scope="module", params=["native", "prompted"])
def proxy(request: pytest.FixtureRequest, stub_upstream: StubUpstream) -> Iterator[RunningServer]:
    with running(create_app(backend_for(stub_upstream, request.param))) as server:
        yield server


@pytest.fixture
def client(proxy: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0, timeout=20)


def result_input(first: Any) -> list[Any]:
    """The next request's input: the question, the reply's items, the tool's result."""
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city": "Paris"}')]
    outputs = [
        {"type": "function_call_output", "call_id": c.call_id, "output": RESULT} for c in calls
    ]
    items = [item.model_dump(exclude_none=True) for item in first.output]
    return [{"role": "user", "content": QUESTION}, *items, *outputs]


def test_tool_round_trip_whole(client: openai.OpenAI) -> None:
    first = client.responses.create(model="m", input=QUESTION, tools=[WEATHER])
    assert first.status == "completed" and first.object == "response"
    assert first.id.startswith("resp_")
    usage = first.usage
    assert usage is not None
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    second = client.responses.create(model="m", input=result_input(first), tools=[WEATHER])
    assert second.status == "completed"
    assert second.output_text == ANSWER
    assert [item.type for item in second.output] == ["message"]


def test_tool_round_trip_streamed_with_the_stream_helper(client: openai.OpenAI) -> None:
    with client.responses.stream(model="m", input=QUESTION, tools=[WEATHER]) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_response()
    assert kinds[:3] == LIFECYCLE_HEAD
    assert "response.function_call_arguments.done" in kinds
    assert kinds[-1] == "response.completed"
    # strict tools get their arguments parsed by the SDK
    call = next(item for item in first.output if item.type == "function_call")
    assert call.parsed_arguments == {"city": "Paris"}
    with client.responses.stream(model="m", input=result_input(first), tools=[WEATHER]) as stream:
        texts = [event.delta for event in stream if event.type == "response.output_text.delta"]
        second = stream.get_final_response()
    assert "".join(texts) == ANSWER == second.output_text


def test_streamed_create_yields_every_event_in_order(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="m", input=QUESTION, tools=[WEATHER], stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events][:3] == LIFECYCLE_HEAD
    assert events[-1].type == "response.completed"
    final = events[-1].response
    assert [item.type for item in final.output if item.type != "message"] == ["function_call"]


def test_the_stateless_refusal_is_an_sdk_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="keeps no state"):
        client.responses.create(model="m", input="hi", previous_response_id="resp_1")


def test_a_stream_cut_midway_ends_in_an_error_event_and_response_failed(
    stub_upstream: StubUpstream,
) -> None:
    with running(create_app(backend_for(stub_upstream, "native", "cut-call"))) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        events = list(
            client.responses.create(model="m", input=QUESTION, tools=[WEATHER], stream=True)
        )
        assert [e.type for e in events][-2:] == ["error", "response.failed"]
        assert events[-1].response.status == "failed"
        assert "cut" in events[-2].message
        with client.responses.stream(model="m", input=QUESTION, tools=[WEATHER]) as stream:
            for _ in stream:
                pass
            with pytest.raises(RuntimeError):
                stream.get_final_response()


# -- over a scripted backend: namespaces, structured output, limits ------------------------

AGENTS: Any = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    "tools": [
        {
            "type": "function",
            "name": "spawn_agent",
            "parameters": {"type": "object", "properties": {"task": {"type": "string"}}},
        }
    ],
}


class City(BaseModel):
    city: str
    sunny: bool


def script(request: Any) -> Any:
    if request.response_format is not None:
        return '{"city": "Paris", "sunny": true}'
    if request.options.max_tokens == 3:
        return "This reply is longer than three tokens."
    if getattr(request.messages[-1], "role", "") == "tool":
        return f"The agent said: {request.messages[-1].output}"
    return AssistantMessage("", (ToolCall("spawn_agent", {"task": "look"}, "call_s"),))


class _Capped(ScriptedBackend):
    """Ends a reply as cut at its token limit, as an upstream does."""

    async def stream(self, request: Any) -> Any:
        async for event in super().stream(request):
            if request.options.max_tokens == 3 and type(event).__name__ == "Finish":
                event = type(event)("length", event.usage)
            yield event


@pytest.fixture(scope="module")
def scripted_client() -> Iterator[tuple[openai.OpenAI, ScriptedBackend]]:
    backend = _Capped(script, chunk_size=5)
    with running(create_app(backend)) as server:
        yield openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0), backend


@pytest.mark.parametrize("streamed", [False, True])
def test_a_namespaced_call_round_trips(
    scripted_client: tuple[openai.OpenAI, ScriptedBackend], streamed: bool
) -> None:
    client, backend = scripted_client
    tools = [AGENTS, {"type": "web_search"}]
    if streamed:
        with client.responses.stream(model="m", input="go", tools=tools) as stream:
            first = stream.get_final_response()
    else:
        first = client.responses.create(model="m", input="go", tools=tools)
    (call,) = first.output
    assert (call.type, call.name, call.namespace) == (
        "function_call",
        "spawn_agent",
        "multi_agent_v1",
    )
    assert [spec.name for spec in backend.requests[-1].tools] == ["spawn_agent"]
    history = [
        {"role": "user", "content": "go"},
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "found it"},
    ]
    second = client.responses.create(model="m", input=history, tools=tools)
    assert second.output_text == "The agent said: found it"
    assert backend.requests[-1].messages[1].tool_calls[0].name == "spawn_agent"


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output_is_parsed_by_the_sdk(
    scripted_client: tuple[openai.OpenAI, ScriptedBackend], streamed: bool
) -> None:
    client, backend = scripted_client
    if streamed:
        with client.responses.stream(model="m", input="Paris?", text_format=City) as stream:
            parsed = stream.get_final_response().output_parsed
    else:
        parsed = client.responses.parse(model="m", input="Paris?", text_format=City).output_parsed
    assert parsed == City(city="Paris", sunny=True)
    assert backend.requests[-1].response_format is not None
    assert backend.requests[-1].response_format.name == "City"


def test_a_reply_cut_at_max_output_tokens_is_incomplete(
    scripted_client: tuple[openai.OpenAI, ScriptedBackend],
) -> None:
    client, _ = scripted_client
    whole = client.responses.create(model="m", input="hi", max_output_tokens=3)
    assert whole.status == "incomplete"
    assert whole.incomplete_details is not None
    assert whole.incomplete_details.reason == "max_output_tokens"
    events = list(client.responses.create(model="m", input="hi", max_output_tokens=3, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
