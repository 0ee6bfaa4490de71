"""Checked instructions with the rest of parlay: tools (judged after the tool loop),
`format=`, streaming, async, the SQLite log, OpenTelemetry spans; and the manual path
(`tool_result`, a thunk whose calls were not run)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from parlay import ScriptedBackend, Session, Store, TextDelta, ToolResult
from parlay.backends.scripted import calls
from parlay.events import Event
from parlay.otel import instrument
from parlay.requirements import BestOfN, RejectionSampling, Repair, req
from parlay.thunk import ModelOutputThunk
from parlay.tool_protocol import SessionToolCallingProtocol

from .helpers import attempts_asked, scripted, short


def stock(item: str) -> int:
    """How many of `item` are in stock."""
    return {"pens": 12}.get(item, 0)


def says_twelve(text: str) -> tuple[bool, str]:
    return ("12" in text, "the answer does not give the stock, 12")


def test_requirements_judge_the_final_answer_after_the_tool_loop() -> None:
    backend = scripted([
        calls(("stock", {"item": "pens"})), "We have some pens.",
        calls(("stock", {"item": "pens"})), "We have 12 pens.",
    ])  # fmt: skip
    session = Session(backend, tools=[stock])
    reply = session.instruct(
        "How many pens?",
        requirements=[req("Give the number in stock", says_twelve)],
        strategy=RejectionSampling(2),
        run_tools=True,
    )
    assert reply.value == "We have 12 pens." and reply.success
    # the chosen attempt's tool round is in the session's context
    kinds = [type(m).__name__ for m in session.ctx.messages()]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResult", "AssistantMessage"]
    assert [s.content for s in reply.steps if isinstance(s, ToolResult)] == ["12"]
    assert reply.sampling.requests == 4  # two rounds an attempt, no judge


class Line(BaseModel):
    text: str


def test_an_answer_not_matching_the_format_fails_a_requirement_and_is_repaired() -> None:
    backend = scripted(['{"txt": "oops"}', '{"text": "the sea"}'])
    session = Session(backend)
    reply = session.instruct("Write a line.", format=Line, strategy=Repair(2))
    assert reply.parsed == Line(text="the sea")
    first = reply.sampling.attempts[0].validations[0]
    assert not first.passed and "text" in first.reason and "Field required" in first.reason
    assert attempts_asked(backend)[1].response_format is not None


def test_the_attempts_stream_one_after_another_and_the_value_is_the_chosen() -> None:
    backend = scripted(["a long first line", "short"])
    backend.chunk_size = 3
    session = Session(backend)
    within = req("At most 8 characters", short(8))
    reply = session.instruct("Write.", requirements=[within], strategy=RejectionSampling(2))
    streamed = "".join(reply)
    assert streamed == "a long first lineshort"
    assert reply.value == "short"


def test_a_checked_instruction_in_async_code() -> None:
    async def main() -> tuple[str, int]:
        session = Session(scripted(["a long answer", "ok"]))
        within = req("At most 4 characters", short(4))
        reply = await session.ainstruct("Write.", requirements=[within], strategy=BestOfN(2))
        return reply.value, len(reply.sampling.attempts)

    assert asyncio.run(main()) == ("ok", 2)


def test_the_log_has_each_attempt_in_its_branch_and_the_chosen_in_the_session(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "log.db")
    session = Session(scripted(["too long an answer", "ok"]), log=store)
    within = req("At most 4 characters", short(4))
    reply = session.instruct("Write.", requirements=[within], strategy=RejectionSampling(3))
    assert reply.value == "ok"
    assert session.log is not None
    main_rows = store.responses(session_id=session.log.session_id, limit=None)
    assert [r.text for r in main_rows] == ["ok"]
    for attempt, text in zip(reply.sampling.attempts, ["too long an answer", "ok"], strict=True):
        log = attempt.session.log
        (row,) = store.responses(session_id=log.session_id, limit=None)
        assert row.text == text
        assert store.session(log.session_id).parent_id == session.log.session_id


def test_one_span_an_attempt_and_one_a_validation() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    session = instrument(Session(scripted(["no", "the sea"], judge=lambda a: "yes" if "sea" in a
                                                                       else "no")), provider)  # fmt: skip
    within = req("At most 9 characters", short(9))
    reply = session.instruct(
        "Write.", requirements=["Mention the sea", within], strategy=RejectionSampling(3)
    )
    assert reply.success
    spans = exporter.get_finished_spans()
    attempts = [s for s in spans if s.name == "parlay.attempt"]
    validations = [s for s in spans if s.name == "parlay.validation"]
    assert [s.attributes["parlay.attempt.passed"] for s in attempts] == [False, True]
    assert len(validations) == 4
    assert [s.attributes["parlay.validation.by"] for s in validations] == ["model", "code"] * 2
    # each attempt's model call and each judge's call sit under their span
    by_id = {s.context.span_id: s for s in spans}
    chats = [s for s in spans if s.name.startswith("chat ")]
    parents = [by_id[s.parent.span_id].name for s in chats if s.parent is not None]
    assert sorted(parents) == sorted(["parlay.attempt"] * 2 + ["parlay.validation"] * 2)
    assert all(by_id[v.parent.span_id].name == "parlay.attempt" for v in validations if v.parent)
    # what was said stays out unless asked for
    assert all("parlay.requirement" not in (s.attributes or {}) for s in validations)


def test_tool_result_records_a_call_and_its_result_on_any_session() -> None:
    backend = ScriptedBackend([calls(("stock", {"item": "pens"})), "12 pens"])
    session = Session(backend, tools=[stock])
    reply = session.chat("How many pens?")
    (call,) = reply.tools
    assert repr(reply).endswith("tools=['stock'] (unrun)>")
    recorded = session.tool_result(call, 12)
    assert recorded == ToolResult(call.id, "stock", output="12", value=12)
    assert session.respond().value == "12 pens"
    assert [type(m).__name__ for m in session.ctx.messages()] == [
        "UserMessage", "AssistantMessage", "ToolResult", "AssistantMessage",
    ]  # fmt: skip


class Shouting(SessionToolCallingProtocol, Session):
    def tool_call_result(self, call, result):  # type: ignore[no-untyped-def]
        return super().tool_call_result(call, str(result).upper())


def test_tool_result_on_a_protocol_session_goes_through_its_hook() -> None:
    session = Shouting(ScriptedBackend([calls(("stock", {"item": "pens"}))]), tools=[stock])
    (call,) = session.chat("How many pens?").tools
    assert session.tool_result(call, "twelve").content == "TWELVE"
    assert session.ctx.messages()[-1].content == "TWELVE"


def test_a_reply_without_calls_does_not_mention_them() -> None:
    reply = Session(ScriptedBackend(["hello"])).chat("hi")
    reply.value  # noqa: B018
    assert "unrun" not in repr(reply)


class Hangs:
    """A model that never answers."""

    name = "hangs"
    capabilities = ScriptedBackend([]).capabilities

    async def stream(self, request: object) -> AsyncIterator[Event]:
        await asyncio.sleep(60)
        yield TextDelta("never")


def test_cancelling_a_checked_instruction_stops_the_attempt_it_is_running() -> None:
    async def main() -> bool:
        session = Session(Hangs())
        reply = session.instruct("Write.", requirements=["Short"], strategy=RejectionSampling(2))
        consumer = asyncio.ensure_future(reply.text_deltas().__anext__())
        await asyncio.sleep(0.05)
        attempt = session.branches["main.1"].ctx.last
        assert isinstance(attempt, ModelOutputThunk) and attempt.is_started
        assert reply.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
        await asyncio.sleep(0.05)
        return attempt.is_computed  # before the loop closes, which would cancel it anyway

    assert asyncio.run(main())  # cancelled with the turn, not left running
