"""No client receives a call to a tool it did not offer (issue 37, item 3).

Claude Code offered `Bash`; the model behind parlay kept asking for `add`, and after
three tries parlay sent Claude Code a `tool_use` for `add`. Here an upstream that only
ever calls a tool the client did not offer, in prompted mode (a plain-chat model writing
actions) and native mode (a server returning a native call), through both protocols,
streamed and not: the client gets a plain answer naming the tool, never the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running
from proxy_stub import WEATHER_TOOL, StubUpstream

from parlay import OpenAIBackend, PromptedBackend, ScriptedBackend
from parlay.backends.base import Capabilities
from parlay.server import create_app

SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
OPENAI_TOOLS: list[Any] = [{"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}]
ANTHROPIC_TOOLS: list[Any] = [{"name": "Bash", "input_schema": SCHEMA}]
ASK: list[Any] = [{"role": "user", "content": "What is 2 + 3?"}]
ADD = '```json action\n{"tool": "add", "parameters": {"a": 2, "b": 3}}\n```'


@pytest.fixture(scope="module")
def prompted() -> Iterator[RunningServer]:
    plain = Capabilities(native_tools=False, json_schema=False)
    upstream = ScriptedBackend(lambda request: ADD, capabilities=plain, chunk_size=5)
    engine = PromptedBackend(upstream, max_retries=2)
    with running(create_app(engine, models=["m"], client_keys=["sk-test"])) as server:
        yield server


@pytest.fixture(scope="module")
def native(stub_upstream: StubUpstream) -> Iterator[RunningServer]:
    # The stub's "call" model answers every request with a native get_weather call.
    upstream = OpenAIBackend("call", base_url=stub_upstream.base_url, api_key="", timeout=5)
    with running(create_app(upstream, client_keys=["sk-test"])) as server:
        yield server


@pytest.fixture(params=["prompted", "native"])
def proxy(request: pytest.FixtureRequest) -> tuple[RunningServer, str]:
    wanted = "add" if request.param == "prompted" else "get_weather"
    return request.getfixturevalue(request.param), wanted


def _openai(server: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test", max_retries=0, timeout=10)


def _anthropic(server: RunningServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="sk-test", max_retries=0, timeout=10)


def test_openai_client_never_receives_a_call_to_a_tool_it_did_not_offer(
    proxy: tuple[RunningServer, str],
) -> None:
    server, wanted = proxy
    reply = _openai(server).chat.completions.create(model="m", messages=ASK, tools=OPENAI_TOOLS)
    choice = reply.choices[0]
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    assert wanted in (choice.message.content or "")


def test_openai_stream_never_carries_a_call_to_a_tool_it_did_not_offer(
    proxy: tuple[RunningServer, str],
) -> None:
    server, wanted = proxy
    stream = _openai(server).chat.completions.stream(model="m", messages=ASK, tools=OPENAI_TOOLS)
    with stream as events:
        completion = events.get_final_completion()
    choice = completion.choices[0]
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    assert wanted in (choice.message.content or "")


@pytest.mark.parametrize("streamed", [False, True])
def test_anthropic_client_never_receives_a_tool_use_it_did_not_offer(
    proxy: tuple[RunningServer, str], streamed: bool
) -> None:
    server, wanted = proxy
    client = _anthropic(server)
    kwargs: dict[str, Any] = {
        "model": "m",
        "max_tokens": 200,
        "messages": ASK,
        "tools": ANTHROPIC_TOOLS,
    }
    if streamed:
        with client.messages.stream(**kwargs) as stream:
            message = stream.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert [block.type for block in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    assert wanted in message.content[0].text  # type: ignore[union-attr]


def test_a_backend_of_the_users_own_cannot_hand_a_client_an_unoffered_call() -> None:
    """The built-in backends drop such calls themselves; a backend written by a user (here
    a scripted one) behind `parlay serve` is gated by the proxy too."""
    from parlay.backends.scripted import calls

    own = ScriptedBackend([calls(("add", {"a": 2, "b": 3}))])
    with running(create_app(own, client_keys=["sk-test"])) as server:
        reply = _openai(server).chat.completions.create(model="m", messages=ASK, tools=OPENAI_TOOLS)
    message = reply.choices[0].message
    assert not message.tool_calls
    assert "add" in (message.content or "")
    assert reply.choices[0].finish_reason == "stop"


# An upstream that ignores tool_choice (Ollama does; the stub's "call" model always calls
# get_weather): the client offered the tool but ruled the call out, so it must not get it.
WEATHER_ANTHROPIC: Any = {
    "name": "get_weather",
    "input_schema": WEATHER_TOOL["function"]["parameters"],
}
WEATHER_RESPONSES: Any = {"type": "function", **WEATHER_TOOL["function"]}


@pytest.mark.parametrize("streamed", [False, True])
def test_a_call_under_tool_choice_none_from_an_upstream_that_ignores_it_never_reaches_the_client(
    native: RunningServer, streamed: bool
) -> None:
    kwargs: dict[str, Any] = {"model": "call", "messages": ASK, "tools": [WEATHER_TOOL],
                              "tool_choice": "none"}  # fmt: skip
    if streamed:
        with _openai(native).chat.completions.stream(**kwargs) as events:
            choice = events.get_final_completion().choices[0]
    else:
        choice = _openai(native).chat.completions.create(**kwargs).choices[0]
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    assert "get_weather" in (choice.message.content or "")
    assert "tool_choice" in (choice.message.content or "")


def test_an_anthropic_client_that_said_none_gets_no_tool_use(native: RunningServer) -> None:
    message = _anthropic(native).messages.create(
        model="call", max_tokens=200, messages=ASK, tools=[WEATHER_ANTHROPIC],
        tool_choice={"type": "none"},
    )  # fmt: skip
    assert [block.type for block in message.content] == ["text"]
    assert message.stop_reason == "end_turn"


def test_a_responses_client_that_said_none_gets_no_function_call(native: RunningServer) -> None:
    response = _openai(native).responses.create(
        model="call", input="What is the weather in Paris?", tools=[WEATHER_RESPONSES],
        tool_choice="none",
    )  # fmt: skip
    assert [item.type for item in response.output] == ["message"]
    assert "get_weather" in response.output_text


def test_a_call_to_another_tool_than_the_one_tool_choice_names_never_reaches_the_client(
    native: RunningServer,
) -> None:
    bash: Any = {"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}
    reply = _openai(native).chat.completions.create(
        model="call", messages=ASK, tools=[WEATHER_TOOL, bash],
        tool_choice={"type": "function", "function": {"name": "Bash"}},
    )  # fmt: skip
    assert not reply.choices[0].message.tool_calls
    assert "get_weather" in (reply.choices[0].message.content or "")


def test_a_session_under_tool_choice_none_runs_no_tool_its_backend_calls_anyway() -> None:
    from parlay import start_session
    from parlay.backends.scripted import calls

    ran: list[str] = []

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        ran.append(city)
        return "sunny"

    backend = ScriptedBackend([calls(("get_weather", {"city": "Paris"}))])
    session = start_session(backend, tools=[get_weather])
    reply = session.chat("Weather in Paris?", tool_choice="none")
    assert ran == []
    assert not reply.tools
    assert "get_weather" in reply.value
