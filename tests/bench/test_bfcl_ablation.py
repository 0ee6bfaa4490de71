"""The ablation asks again only the questions a rule acted on, and its page pairs the
shipped engine with the ablated one question by question."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bfcl import ablation
from bench.bfcl.ablation_report import interval, render_ablation
from bench.bfcl.data import Question
from bench.bfcl.models import Model
from bench.bfcl.outcome import Reply
from bench.bfcl.runner import key
from bench.bfcl.store import Store, key_of
from bench.bfcl.systems import Setup, parlay_system

from parlay.context import UserMessage

CIRCLE = {
    "name": "circle_area",
    "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}}},
}


def question(qid: str) -> Question:
    truth = ({"circle_area": {"radius": [3]}},)
    return Question(qid, "multiple", (UserMessage("area for radius 3?"),), (CIRCLE,), truth)


QWEN = Model("qwen", "Qwen", Path("qwen.gguf"))
SETUP = Setup(QWEN, "http://127.0.0.1:9/v1", 4096, 512, tag="t1")


def shipped_outcome(qid: str, rules: list[str], right: bool) -> dict[str, object]:
    q = question(qid)
    return {
        "model": "qwen",
        "system": "parlay",
        "config": key("qwen", parlay_system(SETUP), q)[4],
        "tag": "t1",
        "half": "validate",
        "category": q.category,
        "question": qid,
        "right": right,
        "calls": [],
        "text": "",
        "rules": rules,
    }


async def test_only_the_questions_the_rule_acted_on_are_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev, out = Store(tmp_path / "dev.jsonl"), Store(tmp_path / "ablation.jsonl")
    dev.append(shipped_outcome("multiple_1", ["refusal"], right=True))
    dev.append(shipped_outcome("multiple_2", [], right=True))
    asked: list[str] = []

    async def answer(system: object, q: object) -> Reply:
        asked.append(q.id)  # type: ignore[attr-defined]
        return Reply(text="no call", seconds=1.0)

    monkeypatch.setattr(ablation, "answer", answer)
    # multiple_3: a shipped outcome from before the rules were recorded; multiple_4: none.
    old = shipped_outcome("multiple_3", [], right=True)
    del old["rules"]
    dev.append(old)
    questions = [question(f"multiple_{n}") for n in (1, 2, 3, 4)]
    counts = await ablation.ablate_rule("qwen", SETUP, "refusal", questions, (dev, out))
    assert asked == ["multiple_1"]
    assert counts == (1, 1, 2)  # asked, derived, no shipped outcome to start from
    stored = {o["question"]: o for o in out.load().values()}
    assert stored["multiple_2"]["derived"] is True and stored["multiple_2"]["right"] is True
    assert stored["multiple_1"]["right"] is False and "derived" not in stored["multiple_1"]
    assert stored["multiple_1"]["system"] == "parlay:no-refusal"
    # A rerun has nothing left to do.
    assert await ablation.ablate_rule("qwen", SETUP, "refusal", questions, (dev, out)) == (
        0,
        0,
        2,
    )


def test_the_gain_of_a_rule_is_paired_and_its_interval_can_exclude_zero() -> None:
    kept = [(True, False)] * 12 + [(True, True)] * 28
    assert interval(kept, [])[0] > 0
    even = [(True, False)] * 3 + [(False, True)] * 3 + [(True, True)] * 34
    low, high = interval(even, [])
    assert low < 0 < high


def test_the_page_names_each_ablated_rule_with_its_verdict() -> None:
    outcomes = []
    for number in range(30):
        qid = f"multiple_{number}"
        base = shipped_outcome(qid, ["invented_value"] if number < 10 else [], right=True)
        off = {**base, "system": "parlay:no-invented_value", "right": number >= 10}
        outcomes += [base, off]
    page = render_ablation(outcomes, "t1")
    row = next(line for line in page.splitlines() if line.startswith("| invented_value"))
    assert "earns its place" in row and "| 30 |" in row and "10 / 0" in row
    assert render_ablation(outcomes, "other").count("| invented_value") == 0


async def test_the_heuristics_together_are_asked_again_where_any_of_them_acted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev, out = Store(tmp_path / "dev.jsonl"), Store(tmp_path / "ablation.jsonl")
    dev.append(shipped_outcome("multiple_1", ["invented_value", "words_fallback"], right=True))
    dev.append(shipped_outcome("multiple_2", ["echo_filter"], right=True))  # a guard only
    asked: list[str] = []

    async def answer(system: object, q: object) -> Reply:
        asked.append(q.id)  # type: ignore[attr-defined]
        return Reply(text="no call")

    monkeypatch.setattr(ablation, "answer", answer)
    questions = [question("multiple_1"), question("multiple_2")]
    assert await ablation.ablate_rule("qwen", SETUP, "heuristics", questions, (dev, out)) == (
        1,
        1,
        0,
    )
    assert asked == ["multiple_1"]
    off = ablation.ablated(SETUP, "heuristics").config["configure"]["rules_off"]
    assert "invented_value" in off and "echo_filter" not in off
    assert ablation.rule_names("words_fallback+refusal,heuristics") == [
        "words_fallback+refusal",
        "heuristics",
    ]
    with pytest.raises(SystemExit, match="unknown rule"):
        ablation.rule_names("words_fallback+nonsense")


def ablation_outcome(
    model: str, tag: str, system: str = "parlay", right: bool = True
) -> dict[str, object]:
    return {
        "model": model, "half": "validate", "tag": tag, "system": system,
        "category": "multiple", "question": "q1", "right": right, "abstained": False,
        "rules": ["refusal", "unsure_call"], "calls": [], "text": "",
    }  # fmt: skip


def test_several_tags_show_a_section_for_each_engine_a_model_ran_on_oldest_first() -> None:
    outcomes = [
        ablation_outcome(model, tag, system)
        for model, tag in (("qwen", "s14"), ("smollm2", "s15"), ("smollm2", "s14"))
        for system in ("parlay", "parlay:no-refusal")
    ]
    page = render_ablation(outcomes, "s14,s15")
    assert "## qwen, validate half (engine `s14`)" in page
    older = page.index("## smollm2, validate half (engine `s14`)")
    assert older < page.index("## smollm2, validate half (engine `s15`)")


def test_the_pooled_rows_take_each_models_newest_run_of_a_rule() -> None:
    # smollm2 ran refusal on both engines (s14: it kept the right call; s15: it did
    # not matter) and unsure_call on s14 only; qwen ran both on s15, keeping nothing.
    outcomes = [
        ablation_outcome("smollm2", "s14"),
        ablation_outcome("smollm2", "s14", "parlay:no-refusal", right=False),
        ablation_outcome("smollm2", "s14", "parlay:no-unsure_call", right=False),
        ablation_outcome("smollm2", "s15"),
        ablation_outcome("smollm2", "s15", "parlay:no-refusal"),
        ablation_outcome("qwen", "s15"),
        ablation_outcome("qwen", "s15", "parlay:no-refusal"),
        ablation_outcome("qwen", "s15", "parlay:no-unsure_call"),
    ]
    page = render_ablation(outcomes, "s14,s15")
    pooled = page[page.index("## Pooled over the models, validate half") :]
    assert "| refusal | 1 + 1 | 2 | +0.0 (" in pooled  # s15's run, not s14's +100
    assert "| unsure_call | 1 + 1 | 2 | +50.0 (" in pooled  # smollm2's only run, on s14


def test_a_variants_outcomes_are_adopted_as_the_shipped_engines_once(tmp_path: Path) -> None:
    dev, out = Store(tmp_path / "dev.jsonl"), Store(tmp_path / "ablation.jsonl")
    typed = {**shipped_outcome("multiple_1", ["refusal"], right=True), "system": "parlay:typed"}
    dev.append(typed)
    dev.append({**typed, "question": "multiple_2", "tag": "t0"})  # another engine's
    questions = [question("multiple_1"), question("multiple_2")]
    assert ablation.adopt("qwen", SETUP, "parlay:typed", questions, (dev, out)) == 1
    assert ablation.adopt("qwen", SETUP, "parlay:typed", questions, (dev, out)) == 0
    (row,) = out.load().values()
    assert (row["system"], row["adopted_from"], row["question"]) == (
        "parlay",
        "parlay:typed",
        "multiple_1",
    )
    assert row["config"] == key("qwen", parlay_system(SETUP), question("multiple_1"))[4]
    # The ablation reads it as the shipped engine's outcome.
    assert ablation.shipped_outcomes((dev, out))[key_of(row)] == row


def test_the_pooled_gain_is_the_mean_of_the_models_and_relevance_is_shown_apart() -> None:
    def outcome(model: str, system: str, category: str, question: str, right: bool) -> dict:
        return {
            "model": model, "half": "validate", "tag": "t", "system": system,
            "category": category, "question": question, "right": right,
            "abstained": not right, "rules": ["refusal"], "calls": [], "text": "",
        }  # fmt: skip

    outcomes = []
    for model, kept in (("qwen", True), ("smollm2", False)):
        outcomes += [
            outcome(model, "parlay", "multiple", "m1", True),
            outcome(model, "parlay:no-refusal", "multiple", "m1", not kept),
            outcome(model, "parlay", "live_irrelevance", "i1", True),
            outcome(model, "parlay:no-refusal", "live_irrelevance", "i1", True),
            outcome(model, "parlay", "live_relevance", "r1", False),
            outcome(model, "parlay:no-refusal", "live_relevance", "r1", True),
        ]
    page = render_ablation(outcomes, "t")
    # qwen: +50 points (the call kept, irrelevance level); smollm2: 0. The mean: +25.
    pooled = page[page.index("## Pooled over the models, validate half") :]
    assert "| refusal | 3 + 3 | 6 | +25.0 (" in pooled
    assert "| refusal | 3 | 3 | 1 / 0 | 0 / 1 | +50.0 (" in page


def test_an_engine_no_rule_was_switched_off_on_has_no_section() -> None:
    outcomes = [ablation_outcome("qwen", "s14"), ablation_outcome("qwen", "s15")]
    outcomes.append(ablation_outcome("qwen", "s15", "parlay:no-refusal"))
    page = render_ablation(outcomes, "s14,s15")
    assert "engine `s14`" not in page and "## qwen, validate half (engine `s15`)" in page
