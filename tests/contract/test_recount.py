"""`recount_calls`: the json reply decides whether to call, the typed format how many.

Opt-in (one more generation for every single call); measured in bench/results/bfcl-opt-in.md.
"""

from __future__ import annotations

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.events import Finish, ToolCallEnd
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS

GRAMMAR = Capabilities(native_tools=False, json_schema=True)
JSON_ONE = '{"action": {"tool": "get_weather", "args": {"city": "Paris"}}}'
JSON_ANSWER = '{"final": {"content": "Hello."}}'
TYPED_TWO = (
    '{"type": "tool_calls", "tools": [{"tool_name": "get_weather", "arguments": '
    '{"city": "Paris"}}, {"tool_name": "get_weather", "arguments": {"city": "Rome"}}]}'
)
TYPED_ONE = (
    '{"type": "tool_call", "tool": {"tool_name": "get_weather", "arguments": {"city": "Rome"}}}'
)
ASKED = ChatRequest((UserMessage("Weather in Paris and in Rome?"),), TOOLS)


async def run(engine: PromptedBackend, request: ChatRequest) -> tuple[list[str], Finish]:
    events = [e async for e in engine.stream(request)]
    finish = events[-1]
    assert isinstance(finish, Finish)
    cities = [e.call.arguments["city"] for e in events if isinstance(e, ToolCallEnd)]
    return cities, finish


async def test_two_calls_of_the_typed_recount_replace_the_single_json_call() -> None:
    inner = ScriptedBackend([JSON_ONE, TYPED_TWO], capabilities=GRAMMAR)
    cities, finish = await run(
        PromptedBackend(inner, action_format="json", rules_on=["recount_calls"]), ASKED
    )
    assert cities == ["Paris", "Rome"]
    assert finish.reason == "tool_calls"
    assert finish.diagnostics is not None
    assert finish.diagnostics.calls_parsed == 2
    assert "recount_calls" in finish.diagnostics.rules
    # The recount is asked in the typed format, a call required: no final answer allowed.
    kinds = {o["properties"]["type"]["const"] for o in _alternatives(inner.requests[1])}
    assert kinds == {"tool_call", "tool_calls"}
    assert finish.usage is not None and finish.usage.prompt_tokens == 2  # both generations


async def test_the_json_call_stands_when_the_recount_writes_one_call() -> None:
    inner = ScriptedBackend([JSON_ONE, TYPED_ONE], capabilities=GRAMMAR)
    cities, finish = await run(
        PromptedBackend(inner, action_format="json", rules_on=["recount_calls"]), ASKED
    )
    assert cities == ["Paris"]
    assert finish.diagnostics is not None
    assert "recount_calls" not in finish.diagnostics.rules
    assert any("recount" in note for note in finish.diagnostics.notes)


async def test_no_recount_when_the_json_reply_answers_in_words() -> None:
    inner = ScriptedBackend([JSON_ANSWER], capabilities=GRAMMAR)
    cities, _ = await run(
        PromptedBackend(inner, action_format="json", rules_on=["recount_calls"]), ASKED
    )
    assert cities == [] and len(inner.requests) == 1


async def test_no_recount_when_parallel_calls_are_off() -> None:
    inner = ScriptedBackend([JSON_ONE], capabilities=GRAMMAR)
    request = ASKED.replace(parallel_tool_calls=False)
    cities, _ = await run(
        PromptedBackend(inner, action_format="json", rules_on=["recount_calls"]), request
    )
    assert cities == ["Paris"] and len(inner.requests) == 1


async def test_no_recount_under_a_forced_choice_or_by_default() -> None:
    forced = ScriptedBackend([JSON_ONE], capabilities=GRAMMAR)
    required = ASKED.replace(tool_choice=ToolChoice("required"))
    assert (
        await run(
            PromptedBackend(forced, action_format="json", rules_on=["recount_calls"]), required
        )
    )[0] == ["Paris"]
    default = ScriptedBackend([JSON_ONE], capabilities=GRAMMAR)
    assert (await run(PromptedBackend(default, action_format="json"), ASKED))[0] == ["Paris"]
    assert len(forced.requests) == len(default.requests) == 1


def _alternatives(request: ChatRequest) -> list[dict]:
    assert request.response_format is not None
    schema = request.response_format.schema
    return list(schema.get("anyOf", [schema]))


async def test_no_recount_once_the_call_has_streamed_out() -> None:
    # With no retry left the json call goes out as it is written (`live` mode): there is
    # nothing left to replace.
    inner = ScriptedBackend([JSON_ONE], capabilities=GRAMMAR)
    engine = PromptedBackend(inner, action_format="json", rules_on=["recount_calls"], max_retries=0)
    cities, finish = await run(engine, ASKED)
    assert cities == ["Paris"] and len(inner.requests) == 1
    assert finish.diagnostics is not None and finish.diagnostics.streaming == "live"
