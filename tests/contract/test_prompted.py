"""PromptedBackend over a scripted plain-chat model: the behaviour matrix."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from parlay import Session
from parlay.backends.base import Capabilities
from parlay.context import AssistantMessage, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.refusal import DEFAULT_REFUSALS
from parlay.errors import ConfigurationError
from parlay.events import (
    Event,
    Finish,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)
from parlay.request import ChatRequest, ToolChoice

from .conftest import HISTORY, TOOLS
from .prompted_kit import PLAIN, PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of


async def test_no_tools_no_history_passes_through_untouched() -> None:
    inner = scripted("Hello there.")
    request = ChatRequest((UserMessage("hi"),))
    events, finish = await run(PromptedBackend(inner), request)
    assert inner.requests == [request]
    assert text_of(events) == "Hello there."
    assert finish.diagnostics is None


async def test_capabilities_look_native() -> None:
    backend = PromptedBackend(scripted(caps=PLAIN_SCHEMA))
    assert backend.capabilities == Capabilities(native_tools=True, json_schema=True)
    assert backend.name == "prompted:scripted"


async def test_single_turn_call() -> None:
    inner = scripted("Let me check.\n" + block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert text_of(events) == "Let me check.\n"
    assert finish.reason == "tool_calls"
    diagnostics = finish.diagnostics
    assert diagnostics is not None and diagnostics.contract_injected
    assert diagnostics.calls_parsed == 1 and diagnostics.retries == ()
    assert diagnostics.action_format == "fenced" and not diagnostics.tool_history_detected
    sent = inner.requests[0]
    assert sent.tools == () and sent.tool_choice.mode == "auto"
    assert "get_weather" in sent.messages[0].content
    # Event order: start, argument deltas, end; the deltas concatenate to the arguments.
    kinds = [type(e).__name__ for e in events if not isinstance(e, (TextDelta, Finish))]
    assert kinds[0] == "ToolCallStart" and kinds[-1] == "ToolCallEnd"
    deltas = "".join(e.delta for e in events if isinstance(e, ToolCallArgsDelta))
    assert json.loads(deltas) == {"city": "Paris"}


async def test_continuation_after_a_result() -> None:
    inner = scripted("It is sunny and 21 C in Rome.")
    request = ChatRequest(HISTORY, TOOLS)
    events, finish = await run(PromptedBackend(inner), request)
    assert text_of(events) == "It is sunny and 21 C in Rome."
    assert finish.reason == "stop"
    assert finish.diagnostics.tool_history_detected
    assert finish.diagnostics.tool_state == "result_received"
    sent = inner.requests[0].messages
    assert all(m.role != "tool" and not getattr(m, "tool_calls", ()) for m in sent)
    assert "Result of get_weather" in sent[-1].content and "sunny" in sent[-1].content


async def test_later_turn_without_repeated_tools_stays_in_tool_mode() -> None:
    history = (*HISTORY, AssistantMessage("Sunny."), UserMessage("And Oslo?"))
    inner = scripted(block("get_weather", city="Oslo"))
    events, finish = await run(PromptedBackend(inner), ChatRequest(history))
    assert calls_of(events) == [("get_weather", {"city": "Oslo"})]
    assert finish.diagnostics.contract_injected
    assert finish.diagnostics.tool_state == "first_decision"


async def test_tool_history_does_not_force_another_call() -> None:
    history = (*HISTORY, AssistantMessage("Sunny."), UserMessage("Thanks!"))
    inner = scripted("You're welcome!")
    events, finish = await run(PromptedBackend(inner), ChatRequest(history, TOOLS))
    assert calls_of(events) == [] and finish.reason == "stop" and finish.diagnostics.retries == ()


async def test_required_retries_when_no_call_came_and_hides_the_discarded_reply() -> None:
    inner = scripted("The weather is nice.", block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?", "required"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert "nice" not in text_of(events)
    assert [r.reason for r in finish.diagnostics.retries] == ["no_call"]
    assert finish.diagnostics.streaming == "buffered/buffered"
    retry_messages = inner.requests[1].messages
    assert retry_messages[-2] == AssistantMessage("The weather is nice.")
    assert "requires a tool call" in retry_messages[-1].content


async def test_retries_get_stricter_and_stop_at_the_limit() -> None:
    inner = scripted("no", "still no", "never")
    events, finish = await run(PromptedBackend(inner), ask("Weather?", "required"))
    assert [r.reason for r in finish.diagnostics.retries] == ["no_call", "no_call"]
    assert len(inner.requests) == 3
    assert "Write the corrected tool call now." in inner.requests[1].messages[-1].content
    assert "exactly one tool call in this shape" in inner.requests[2].messages[-1].content
    # The last attempt cannot be retried, so it streams live and is what the caller gets.
    assert text_of(events) == "never" and finish.diagnostics.streaming.endswith("live")


async def test_named_tool_wrong_call_is_retried() -> None:
    inner = scripted(block("get_weather", city="Paris"), block("add", a=2, b=3))
    events, finish = await run(PromptedBackend(inner), ask("2+3?", ToolChoice("tool", "add")))
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert [r.reason for r in finish.diagnostics.retries] == ["wrong_tool"]


async def test_tool_choice_none_gives_no_call() -> None:
    inner = scripted("Sure. " + block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather?", "none"))
    assert calls_of(events) == [] and finish.reason == "stop"
    assert text_of(events) == "Sure. "
    assert any("tool_choice is none" in n for n in finish.diagnostics.notes)
    assert finish.diagnostics.streaming == "live"


async def test_soft_refusal_under_auto_is_retried() -> None:
    inner = scripted(
        "I'm sorry, I don't have access to real-time weather data.",
        block("get_weather", city="Paris"),
    )
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert "sorry" not in text_of(events)
    assert [r.reason for r in finish.diagnostics.retries] == ["refusal"]
    assert finish.diagnostics.refusal == "soft: i don't have access to"


async def test_a_refusal_under_auto_is_asked_once_and_a_second_one_stands() -> None:
    # The model may decline a task: asked once whether a tool helps after all, it decides.
    inner = scripted("I can't help with that request.", "I can't help with that request.")
    events, finish = await run(PromptedBackend(inner), ask("Do something bad"))
    assert text_of(events) == "I can't help with that request."
    assert [r.reason for r in finish.diagnostics.retries] == ["refusal"]
    assert finish.diagnostics.refusal == "hard: i can't help with"
    assert len(inner.requests) == 2


@pytest.mark.parametrize(
    "refusal",
    [
        "I'm sorry, but I don't have any available weather data for Paris.",
        "I don't have any information about the weather in Paris.",
    ],
)
async def test_a_soft_refusal_while_a_fitting_tool_is_offered_is_asked_again(
    refusal: str,
) -> None:
    # What small models write with get_weather on the table: a failed tool turn, not an
    # answer; asked again, the model calls the tool.
    inner = scripted(refusal, block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert [r.reason for r in finish.diagnostics.retries] == ["refusal"]


class Stalling:
    """A plain-chat model that writes a few words and then waits (a slow model)."""

    name = "stalling"
    capabilities = PLAIN

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        yield TextDelta("Sunny in Paris. ")
        await asyncio.Event().wait()


@pytest.mark.parametrize(("rules_off", "shown"), [((), False), (("refusal",), True)])
async def test_text_is_held_for_the_refusal_check_only_while_it_is_on(
    rules_off: tuple[str, ...], shown: bool
) -> None:
    backend = PromptedBackend(Stalling(), rules_off=rules_off)
    events = backend.stream(ask("Weather in Paris?"))
    try:
        first = await asyncio.wait_for(anext(events), timeout=1)
    except TimeoutError:
        first = None
    finally:
        await events.aclose()
    assert isinstance(first, TextDelta) is shown


async def test_chinese_refusal_is_detected_and_retried_when_forced() -> None:
    inner = scripted("抱歉，我无法查询天气。", block("get_weather", city="北京"))
    events, finish = await run(PromptedBackend(inner), ask("北京天气?", "required"))
    assert calls_of(events) == [("get_weather", {"city": "北京"})]
    assert [r.reason for r in finish.diagnostics.retries] == ["refusal"]


async def test_user_refusal_phrases_extend_the_set() -> None:
    phrases = DEFAULT_REFUSALS.extend(soft=["my crystal ball is cloudy"])
    inner = scripted("My crystal ball is cloudy today.", block("get_weather", city="Paris"))
    request = ask("Weather in Paris?")
    _, finish = await run(PromptedBackend(inner, refusal_phrases=phrases), request)
    assert [r.reason for r in finish.diagnostics.retries] == ["refusal"]


async def test_legitimate_plain_answer_is_not_retried() -> None:
    inner = scripted("Hamlet was written by Shakespeare.")
    events, finish = await run(PromptedBackend(inner), ask("Who wrote Hamlet?"))
    assert text_of(events) == "Hamlet was written by Shakespeare."
    assert finish.diagnostics.retries == () and finish.reason == "stop"


async def test_unreadable_action_is_retried() -> None:
    inner = scripted(
        '```json action\n{"parameters": {"city": "Paris"}}\n```', block("get_weather", city="Paris")
    )
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert [r.reason for r in finish.diagnostics.retries] == ["unreadable"]
    assert "could not be read" in inner.requests[1].messages[-1].content


async def test_unknown_tool_is_rejected_with_the_real_list() -> None:
    inner = scripted(block("get_wether", city="Paris"), block("get_weather", city="Paris"))
    events, finish = await run(PromptedBackend(inner), ask("Weather in Paris?"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"})]
    assert [r.reason for r in finish.diagnostics.retries] == ["unknown_tool"]
    assert "get_weather, add" in inner.requests[1].messages[-1].content


async def test_arguments_failing_the_schema_show_schema_and_error() -> None:
    inner = scripted(block("add", a="two", b=3), block("add", a=2, b=3))
    events, finish = await run(PromptedBackend(inner), ask("two plus 3"))
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    assert [r.reason for r in finish.diagnostics.retries] == ["invalid_arguments"]
    message = inner.requests[1].messages[-1].content
    assert "a (integer, required)" in message and "'a'" in message


async def test_scalars_are_coerced_and_wrappers_unwrapped() -> None:
    reply = '```json action\n{"tool": "add", "parameters": {"parameters": {"a": "2", "b": 3}}}\n```'
    events, _finish = await run(PromptedBackend(scripted(reply)), ask("2+3"))
    assert calls_of(events) == [("add", {"a": 2, "b": 3})]
    deltas = "".join(e.delta for e in events if isinstance(e, ToolCallArgsDelta))
    assert json.loads(deltas) == {"a": 2, "b": 3}  # held calls carry the repaired JSON


async def test_several_action_blocks() -> None:
    inner = scripted(block("get_weather", city="Paris") + "\n" + block("add", a=1, b=2))
    events, finish = await run(PromptedBackend(inner), ask("Paris weather, and 1+2"))
    assert calls_of(events) == [("get_weather", {"city": "Paris"}), ("add", {"a": 1, "b": 2})]
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0, 1]
    assert finish.diagnostics.calls_parsed == 2


@pytest.mark.parametrize(
    ("fmt", "reply"),
    [
        ("json", '{"thought": "sum", "action": {"tool": "add", "args": {"a": 1, "b": 2}}}'),
        ("fenced", block("add", a=1, b=2)),
    ],
)
async def test_each_format_round_trips(fmt: str, reply: str) -> None:
    inner = scripted(reply)
    events, _ = await run(PromptedBackend(inner, action_format=fmt), ask("1+2"))
    assert calls_of(events) == [("add", {"a": 1, "b": 2})]


async def test_json_format_final_answer_is_visible_text() -> None:
    inner = scripted('{"final": {"content": "Paris is in France."}}')
    events, finish = await run(PromptedBackend(inner, action_format="json"), ask("Where?"))
    assert text_of(events) == "Paris is in France." and finish.reason == "stop"


async def test_constraint_used_when_forced_and_available() -> None:
    inner = scripted(json.dumps({"tool": "add", "parameters": {"a": 1, "b": 2}}), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, action_format="fenced")
    events, _ = await run(backend, ask("1+2", ToolChoice("tool", "add")))
    assert calls_of(events) == [("add", {"a": 1, "b": 2})]
    one, several = inner.requests[0].response_format.schema["anyOf"]
    assert several["properties"]["actions"]["items"] == one


async def test_by_default_a_backend_taking_schemas_gets_the_typed_format_under_a_grammar() -> None:
    inner = scripted('{"type": "final", "content": "Hi."}', caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner)
    events, finish = await run(backend, ask("hi"))
    assert backend.action_format == "typed" and finish.diagnostics.constrained
    assert text_of(events) == "Hi."
    options = inner.requests[0].response_format.schema["anyOf"]
    assert {"type", "content"} in [set(o["properties"]) for o in options]


async def test_by_default_a_plain_backend_gets_free_fenced_blocks() -> None:
    inner = scripted("Hi.")
    backend = PromptedBackend(inner)
    _, finish = await run(backend, ask("hi"))
    assert backend.action_format == "fenced" and not finish.diagnostics.constrained
    assert inner.requests[0].response_format is None
    # Asked not to constrain, a backend that could is left free, in the fenced format.
    assert PromptedBackend(scripted(caps=PLAIN_SCHEMA), constrained=False).action_format == (
        "fenced"
    )


async def test_constrained_true_under_auto_allows_a_final_answer() -> None:
    inner = scripted('{"type": "final", "content": "Hello!"}', caps=PLAIN_SCHEMA)
    events, _finish = await run(PromptedBackend(inner, constrained=True), ask("hi"))
    assert text_of(events) == "Hello!"
    options = inner.requests[0].response_format.schema["anyOf"]
    assert {"type", "content"} in [set(o["properties"]) for o in options]


def test_constrained_true_without_schema_support_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="JSON-schema output"):
        PromptedBackend(scripted(), constrained=True)


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="fenced, json, typed"):
        PromptedBackend(scripted(), action_format="xml")


def test_configure_copies_with_changes() -> None:
    base = PromptedBackend(scripted(caps=PLAIN_SCHEMA))
    other = base.configure(action_format="json", constrained=False, few_shot=False)
    assert other.inner is base.inner and other.action_format == "json"
    assert not other.options.few_shot and base.options.few_shot


def test_a_setting_cannot_be_changed_in_place_where_the_engine_would_not_see_it() -> None:
    backend = PromptedBackend(scripted())
    with pytest.raises(AttributeError, match="configure"):
        backend.max_retries = 5
    assert backend.max_retries == 2 and backend.configure(max_retries=5).max_retries == 5
    assert PromptedBackend.max_retries is not None  # read on the class, as a property is


class SlowText:
    """A plain-chat backend that yields text slowly and records how far it got."""

    name = "slow"
    capabilities = PLAIN

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.sent = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        for piece in self.pieces:
            self.sent += 1
            yield TextDelta(piece)
            await asyncio.sleep(0)
        yield Finish("stop")


async def test_live_mode_streams_before_the_reply_ends() -> None:
    inner = SlowText(["Hello ", "there, ", "no tools ", "needed."])
    backend = PromptedBackend(inner, max_retries=0)
    seen_at = []
    async for event in backend.stream(ask("hi")):
        if isinstance(event, TextDelta):
            seen_at.append(inner.sent)
    assert seen_at[0] < len(inner.pieces)


async def test_hybrid_mode_streams_text_after_the_refusal_window() -> None:
    words = [f"{i:02d} the reply goes on without a line end or a loop, " for i in range(10)]
    inner = SlowText([*words, "\n", block("add", a=1, b=2)])
    backend = PromptedBackend(inner, refusal_window=100)
    first_text_at = None
    events = []
    async for event in backend.stream(ask("go")):
        events.append(event)
        if isinstance(event, TextDelta) and first_text_at is None:
            first_text_at = inner.sent
    assert first_text_at is not None and first_text_at <= 3
    assert calls_of(events) == [("add", {"a": 1, "b": 2})]


async def test_session_runs_the_tool_loop_through_the_prompted_backend() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    inner = scripted(block("add", a=2, b=40), "The sum is 42.")
    session = Session(PromptedBackend(inner), tools=[add])
    thunk = await session.query("2 and 40", "What is their sum?")
    assert thunk.value == "The sum is 42."
    second = inner.requests[1].messages
    assert any(isinstance(m, UserMessage) and "Result of add" in m.content for m in second)
    assert not any(isinstance(m, ToolResult) for m in second)
