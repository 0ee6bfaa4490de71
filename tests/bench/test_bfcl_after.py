"""The turn-after-a-result benchmark: continuations built from BFCL's ground truth, and
judged by what the turn must do (end with the results, or make the call still missing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.bfcl import after_result
from bench.bfcl.after import CONTINUATIONS, derive, render, touched
from bench.bfcl.after_result import (
    Continuation,
    continuations,
    continue_question,
    judge,
    parrots,
    truth_calls,
)
from bench.bfcl.data import Question
from bench.bfcl.outcome import Reply
from bench.bfcl.runner import run
from bench.bfcl.store import Store

from parlay.context import AssistantMessage, ToolResult, UserMessage

WEATHER = {
    "name": "weather",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TIME = {"name": "local_time", "parameters": {"type": "dict", "properties": {}}}


def question(*truth: dict[str, Any]) -> Question:
    return Question(
        "parallel_multiple_7",
        "parallel_multiple",
        (UserMessage("Weather in Oslo and Rome, and the time?"),),
        (WEATHER, TIME),
        truth,
    )


TWO_CITIES = question(
    {"weather": {"city": ["Oslo", "Oslo, Norway"], "unit": ["", "celsius"]}},
    {"weather": {"city": ["Rome"], "unit": [""]}},
)


def carried_on(stage: str, q: Question = TWO_CITIES) -> Continuation:
    made = continue_question(q, stage)  # type: ignore[arg-type]
    assert made is not None
    return made


def test_the_calls_made_are_the_first_accepted_values_without_those_left_out() -> None:
    calls = truth_calls(TWO_CITIES)
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        ("weather", {"city": "Oslo", "unit": "celsius"}),
        ("weather", {"city": "Rome"}),
    ]


def test_every_call_made_has_its_result_in_the_conversation() -> None:
    item = carried_on("all")
    *_, assistant, first, second = item.question.messages
    assert isinstance(assistant, AssistantMessage) and len(assistant.tool_calls) == 2
    assert isinstance(first, ToolResult) and isinstance(second, ToolResult)
    assert [first.call_id, second.call_id] == [c.id for c in assistant.tool_calls]
    assert str(item.results[0]) in first.output and str(item.results[1]) in second.output
    assert item.results[0] != item.results[1]


def test_a_single_call_question_has_no_stage_some() -> None:
    assert continue_question(question({"local_time": {}}), "some") is None


def test_an_answer_carrying_every_result_is_right_however_the_number_is_written() -> None:
    item = carried_on("all")
    first, second = item.results
    text = f"Oslo: {first:,}. Rome: {second}."
    assert judge(item, Reply((), text))["right"]
    assert not judge(item, Reply((), f"Oslo: {first}."))["right"]


def test_calling_again_after_every_result_is_wrong_and_a_repeat_is_counted() -> None:
    item = carried_on("all")
    again = judge(item, Reply((("weather", {"city": "Rome"}),), ""))
    assert (again["right"], again["ended"], again["repeated"]) == (False, False, True)
    other = judge(item, Reply((("local_time", {}),), ""))
    assert (other["right"], other["repeated"]) == (False, False)


def test_an_empty_reply_is_counted_as_empty() -> None:
    verdict = judge(carried_on("all"), Reply((), "  "))
    assert (verdict["right"], verdict["empty"]) == (False, True)


def test_after_some_results_the_call_still_missing_is_right_and_the_same_call_is_not() -> None:
    item = carried_on("some")
    assert item.still_to_call == {"weather"}
    assert judge(item, Reply((("weather", {"city": "Rome"}),), ""))["right"]
    same = judge(item, Reply((("weather", {"city": "Oslo", "unit": "celsius"}),), ""))
    assert (same["right"], same["repeated"]) == (False, True)
    assert not judge(item, Reply((("local_time", {}),), ""))["right"]
    assert not judge(item, Reply((), f"It is {item.results[0]} in Oslo."))["right"]


def test_the_continuations_come_from_both_stages_of_the_call_categories() -> None:
    items = continuations("tune", 2)
    assert {i.stage for i in items} == {"all", "some"}
    assert all(i.stage == "all" or len(truth_calls(i.question)) >= 2 for i in items)
    assert len({i.id for i in items}) == len(items)


class Answers:
    """A system that answers every continuation with the numbers it was given."""

    def __init__(self) -> None:
        self.name = "scripted"
        self.config = {"kind": "scripted", "tag": "t"}
        self.asked: list[str] = []

    async def answer(self, q: Question) -> Reply:
        self.asked.append(q.id)
        outputs = [m.output for m in q.messages if isinstance(m, ToolResult)]
        return Reply((), " ".join(outputs))


def quiet(_: str) -> None:
    pass


async def test_a_rerun_of_the_benchmark_asks_nothing_again(tmp_path: Path) -> None:
    store, system = Store(tmp_path / "after.jsonl"), Answers()
    items = [carried_on("all"), carried_on("some")]
    assert (await run("m", [system], items, store, asking=CONTINUATIONS, report=quiet)).asked == 2
    assert (await run("m", [system], items, store, asking=CONTINUATIONS, report=quiet)).asked == 0
    page = render(list(store.load().values()), "t")
    assert "Stage `all`, 1 continuations" in page and "| scripted | 1 | 100 %" in page


async def test_a_new_engine_tag_copies_the_outcomes_its_change_cannot_touch(
    tmp_path: Path,
) -> None:
    store, before = Store(tmp_path / "after.jsonl"), Answers()
    items = [carried_on("all"), carried_on("some")]
    before.name = "parlay"
    await run("m", [before], items, store, asking=CONTINUATIONS, report=quiet)
    first = next(iter(store.load().values()))
    store.append({**first, "retries": ["repeated_call"]})  # the rule acted on this one
    after = Answers()
    after.name, after.config = "parlay", {"kind": "scripted", "tag": "new"}
    assert derive("m", [after], store, "t", "repeated_call") == 1
    assert (await run("m", [after], items, store, asking=CONTINUATIONS, report=quiet)).asked == 1
    rows = [o for o in store.load().values() if o["tag"] == "new"]
    assert sorted(bool(o.get("derived")) for o in rows) == [False, True]
    # A third engine copies the second's outcomes, the copied one included.
    later = Answers()
    later.name, later.config = "parlay", {"kind": "scripted", "tag": "newer"}
    assert derive("m", [later], store, "new", "repeated_call") == 2


def test_a_reply_copying_the_continuations_instructions_is_counted_as_parroted() -> None:
    shipped = (
        Path(__file__).resolve().parents[2] / "templates/contract/continuation.j2"
    ).read_text()
    clauses = [
        c for c in after_result.INSTRUCTION_CLAUSES if c in " ".join(shipped.split()).lower()
    ]
    assert len(clauses) >= 4  # the measure follows the shipped template's words
    assert parrots("The total is 42004. Decide the next step: call another tool if the task")
    assert parrots("The request asks for something no result above gives yet.")
    assert not parrots("calculate_displacement returned 42004, so the next step is done.")


def test_a_derived_run_asks_again_where_the_reply_parroted_the_instructions() -> None:
    parroted = {"text": "Decide the next step: call another tool.", "retries": [], "rules": []}
    answered = {"text": "It is 42004.", "retries": ["repeated_call"], "rules": []}
    assert touched(parroted, "parroted") and not touched(answered, "parroted")
    assert touched(answered, "repeated_call") and not touched(parroted, "repeated_call")
    assert touched(answered, "parroted, repeated_call") and touched(parroted, "x,parroted")
    assert touched({**answered, "repeated": True}, "repeated")
