"""A rule switched on is asked only where it could act: a retried outcome, or released
calls it judges; every other outcome is the base engine's, copied."""

from __future__ import annotations

from pathlib import Path

import pytest
from attrs import evolve
from bench.bfcl import ablation, switched_on
from bench.bfcl.data import Question
from bench.bfcl.models import Model
from bench.bfcl.outcome import Reply
from bench.bfcl.runner import key
from bench.bfcl.store import Store
from bench.bfcl.systems import VARIANTS, Setup, parlay_system

from parlay.context import UserMessage

CIRCLE = {
    "name": "circle_area",
    "description": "Area of a circle.",
    "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}}},
}
QWEN = Model("qwen", "Qwen", Path("qwen.gguf"))
SETUP = Setup(QWEN, "http://127.0.0.1:9/v1", 4096, 512, tag="t1")


def question(qid: str, text: str) -> Question:
    truth = ({"circle_area": {"radius": [3]}},)
    return Question(qid, "multiple", (UserMessage(text),), (CIRCLE,), truth)


def base_outcome(q: Question, *, called: bool, retried: bool) -> dict[str, object]:
    return {
        "model": "qwen",
        "system": "parlay:typed",
        "config": key("qwen", parlay_system(SETUP, "typed", VARIANTS["typed"]), q)[4],
        "tag": "t1",
        "half": "validate",
        "category": q.category,
        "question": q.id,
        "right": called,
        "calls": [{"name": "circle_area", "arguments": {"radius": 3}}] if called else [],
        "text": "",
        "retries": [{"reason": "invented_value"}] if retried else [],
        "rules": [],
    }


async def test_only_where_the_rule_could_act_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "dev.jsonl")
    questions = [
        question("multiple_1", "What colour is the sea?"),  # a call to an unrelated tool
        question("multiple_2", "The circle's area for radius 3?"),  # a related call
        question("multiple_3", "The circle's area for radius 3?"),  # retried: asked
        question("multiple_4", "What colour is the sea?"),  # no call
        question("multiple_5", "What colour is the sea?"),  # no base outcome
    ]
    for q, called, retried in zip(
        questions[:4], (True, True, True, False), (False, False, True, False), strict=True
    ):
        store.append(base_outcome(q, called=called, retried=retried))
    asked: list[str] = []

    async def answer(system: object, q: Question) -> Reply:
        asked.append(q.id)
        return Reply(text="in words", seconds=1.0)

    monkeypatch.setattr(ablation, "answer", answer)
    variant = "typed+unrelated"
    counts = await switched_on.switch_on("qwen", (SETUP, SETUP), variant, questions, store)
    assert asked == ["multiple_1", "multiple_3"]
    assert counts == (2, 2, 1)  # asked, derived, no base outcome
    mine = {
        o["question"]: o for o in store.load().values() if o["system"] == "parlay:typed+unrelated"
    }
    assert mine["multiple_2"]["derived"] is True and mine["multiple_2"]["right"] is True
    assert mine["multiple_1"]["right"] is False and "derived" not in mine["multiple_1"]
    again = await switched_on.switch_on("qwen", (SETUP, SETUP), variant, questions, store)
    assert again == (0, 0, 1)
    # A later engine tag over the same base outcomes (`--base-tag`): asked and derived again.
    later = (evolve(SETUP, tag="later"), SETUP)
    assert await switched_on.switch_on("qwen", later, variant, questions, store) == (2, 2, 1)
    tags = [o.get("tag") for o in store.load().values() if o["system"] == "parlay:typed+unrelated"]
    assert sorted(tags) == ["later"] * 4 + [SETUP.tag] * 4


@pytest.mark.parametrize(
    ("share", "called", "retried", "could_act"),
    [
        (0.4, True, False, True),  # leaned to words and called: judged
        (0.4, False, True, True),  # retried: its first reply may have called
        (0.4, False, False, False),  # its first reply was words: nothing to judge
        (0.2, True, False, False),  # below the threshold
        (None, True, False, False),  # no alternatives were reported
    ],
)
def test_leaned_to_words_could_act_where_a_leaning_first_reply_may_have_called(
    share: float | None, called: bool, retried: bool, could_act: bool
) -> None:
    q = question("multiple_1", "The circle's area for radius 3?")
    outcome = {**base_outcome(q, called=called, retried=retried), "answer_share": share}
    assert switched_on.COULD_ACT["leaned_to_words"](q, outcome) is could_act
