"""The store keeps every outcome as it comes; a rerun asks only what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.bfcl.data import Question
from bench.bfcl.outcome import Reply
from bench.bfcl.runner import QUESTIONS, run
from bench.bfcl.store import Store, config_key

from parlay.context import UserMessage

CIRCLE = {
    "name": "circle_area",
    "parameters": {
        "type": "dict",
        "properties": {"radius": {"type": "integer"}},
        "required": ["radius"],
    },
}


def question(qid: str, category: str = "multiple") -> Question:
    truth = ({"circle_area": {"radius": [3]}},) if category == "multiple" else ()
    return Question(
        qid, category, (UserMessage("area of a circle of radius 3?"),), (CIRCLE,), truth
    )


class Scripted:
    """A system that answers from a script and counts what it was asked."""

    def __init__(self, name: str, calls: tuple[tuple[str, Any], ...] = (), error: str = "") -> None:
        self.name = name
        self.config = {"kind": name}
        self.calls, self.error = calls, error
        self.asked: list[str] = []

    async def answer(self, question: Question) -> Reply:
        self.asked.append(question.id)
        if self.error:
            return Reply(error=self.error)
        return Reply(self.calls, "", seconds=0.5)


async def test_a_rerun_asks_nothing_that_is_done(tmp_path: Path) -> None:
    store = Store(tmp_path / "outcomes.jsonl")
    right = Scripted("right", (("circle_area", {"radius": 3}),))
    silent = Scripted("silent")
    first = [question("multiple_1"), question("live_irrelevance_1", "live_irrelevance")]
    progress = await run(
        "m", [right, silent], first, store, asking=QUESTIONS, report=lambda _: None
    )
    assert (progress.asked, progress.skipped) == (4, 0)

    again = await run("m", [right, silent], first, store, asking=QUESTIONS, report=lambda _: None)
    assert (again.asked, again.skipped) == (0, 4)
    assert right.asked == silent.asked == ["multiple_1", "live_irrelevance_1"]

    more = [*first, question("multiple_2")]
    await run("m", [right, silent], more, store, asking=QUESTIONS, report=lambda _: None)
    assert right.asked[-1] == silent.asked[-1] == "multiple_2" and len(right.asked) == 3
    outcomes = store.load()
    assert len(outcomes) == 6
    assert outcomes["m", "right", "multiple", "multiple_1", config_key(right.config)]["right"]
    assert outcomes[
        "m", "silent", "live_irrelevance", "live_irrelevance_1", config_key(silent.config)
    ]["abstained"]


async def test_another_model_or_config_is_asked_afresh(tmp_path: Path) -> None:
    store = Store(tmp_path / "outcomes.jsonl")
    system = Scripted("s")
    await run(
        "m", [system], [question("multiple_1")], store, asking=QUESTIONS, report=lambda _: None
    )
    await run(
        "other", [system], [question("multiple_1")], store, asking=QUESTIONS, report=lambda _: None
    )
    system.config = {"kind": "s", "tag": "new engine"}
    await run(
        "m", [system], [question("multiple_1")], store, asking=QUESTIONS, report=lambda _: None
    )
    assert len(system.asked) == 3


async def test_failed_requests_are_kept_and_asked_again_only_when_told(tmp_path: Path) -> None:
    store = Store(tmp_path / "outcomes.jsonl")
    broken = Scripted("s", error="ConnectError: server gone")
    await run(
        "m", [broken], [question("multiple_1")], store, asking=QUESTIONS, report=lambda _: None
    )
    [outcome] = store.load().values()
    assert (outcome["error_type"], outcome["right"], outcome["abstained"]) == (
        "request_error",
        False,
        False,
    )

    await run(
        "m", [broken], [question("multiple_1")], store, asking=QUESTIONS, report=lambda _: None
    )
    assert len(broken.asked) == 1
    broken.error = ""
    await run(
        "m",
        [broken],
        [question("multiple_1")],
        store,
        asking=QUESTIONS,
        retry_errors=True,
        report=lambda _: None,
    )
    assert len(broken.asked) == 2
    [outcome] = store.load().values()
    assert outcome["error_type"] != "request_error"


async def test_an_exception_in_a_system_is_a_failed_request_not_the_end_of_the_run(
    tmp_path: Path,
) -> None:
    class Crashing(Scripted):
        async def answer(self, question: Question) -> Reply:
            raise RuntimeError("bug")

    store = Store(tmp_path / "outcomes.jsonl")
    fine = Scripted("fine")
    await run(
        "m",
        [Crashing("c"), fine],
        [question("multiple_1")],
        store,
        asking=QUESTIONS,
        report=lambda _: None,
    )
    assert fine.asked == ["multiple_1"]
    errors = [o["error"] for o in store.load().values() if o["error_type"] == "request_error"]
    assert errors == ["RuntimeError in c: bug"]


def test_a_line_cut_by_a_crash_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.jsonl"
    store = Store(path)
    store.append({"model": "m", "system": "s", "category": "c", "question": "q", "config": "k"})
    with path.open("a") as handle:
        handle.write('{"model": "m", "system": "s", "categ')
    assert list(store.load()) == [("m", "s", "c", "q", "k")]


def test_the_config_key_ignores_key_order_and_changes_with_any_value() -> None:
    assert config_key({"a": 1, "b": [2]}) == config_key({"b": [2], "a": 1})
    assert config_key({"a": 1}) != config_key({"a": 2})
