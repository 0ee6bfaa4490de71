"""The knob's page derives each value's outcome from the first replies and a full run."""

from __future__ import annotations

from bench.bfcl import knob


def first_reply(
    category: str, shares: list[float], answering: float | None, calls: int = 1
) -> dict:
    question = f"{category}_{shares}_{answering}"
    return {"question": question, "category": category, "calls": calls, "shares": shares,
            "answer_share": answering}  # fmt: skip


def test_a_call_less_sure_than_the_knob_on_either_count_is_asked_for_words() -> None:
    unsure_tool = first_reply("simple_python", [0.4], 0.1)
    assert knob.asked_for_words(unsure_tool, 0.5)
    assert not knob.asked_for_words(unsure_tool, 0.3)
    unsure_to_call = first_reply("simple_python", [0.95], 0.6)
    assert knob.asked_for_words(unsure_to_call, 0.5)  # 40 % on calling
    assert not knob.asked_for_words(unsure_to_call, 0.3)
    # Two calls, one of them sure: the reply made a call of its own choosing.
    assert not knob.asked_for_words(first_reply("parallel", [0.2, 0.9], 0.1, calls=2), 0.5)
    # A name not found in the tokens is not judged; an answer in words never is.
    assert not knob.asked_for_words(first_reply("parallel", [0.2], 0.1, calls=2), 0.5)
    assert not knob.asked_for_words(first_reply("simple_python", [], 0.9, calls=0), 0.5)


def test_the_outcome_is_the_full_runs_unless_the_knob_asks_for_words() -> None:
    called = first_reply("live_irrelevance", [0.3], 0.2)
    assert knob.right_under(called, 0.5, {"right": False}) is True  # asked: it abstains
    assert knob.right_under(called, 0.2, {"right": False}) is False  # the full run's
    right = first_reply("simple_python", [0.3], 0.2)
    assert knob.right_under(right, 0.5, {"right": True}) is False  # the knob's cost


def test_the_rule_picks_the_best_balanced_score_at_values_the_run_can_show() -> None:
    rows = [
        first_reply("simple_python", [0.55], 0.1),
        first_reply("simple_python", [0.75], 0.1),
        first_reply("live_irrelevance", [0.45], 0.1),
        first_reply("live_irrelevance", [], None, calls=0),
    ]
    full = {
        r["question"]: {"right": r["category"] == "simple_python" or not r["calls"]} for r in rows
    }
    # At 0.5 the call where no tool fits goes, and both right calls stay.
    assert knob.best(rows, full, 0.1) == 0.5
    assert [s.value for s in knob.scores(rows, full, 0.5)] == [1.0, 1.0, 1.0]
    # A run made at 0.6 cannot show what 0.5 would have kept: the rule looks from 0.6 on.
    assert knob.best(rows, full, 0.6) == 0.6


def test_a_real_run_at_the_knobs_value_is_shown_with_how_often_the_derivation_agreed() -> None:
    rows = [
        {**first_reply("live_irrelevance", [0.3], 0.2), "half": "validate"},
        {**first_reply("simple_python", [0.9], 0.1), "half": "validate"},
    ]
    full = {r["question"]: {"right": False} for r in rows}
    # Derived at 0.5: the unsure call abstains (right), the sure one keeps the full run's
    # wrong outcome. The real run called where no tool fits and got the other right.
    real = {
        rows[0]["question"]: {"category": "live_irrelevance", "right": False},
        rows[1]["question"]: {"category": "simple_python", "right": True},
    }
    run = knob.CheckRun(real, "t", 0.5)
    assert run.label == "run at 0.5 (t)"
    assert run.agreement("validate", rows, full).endswith("the same outcome for 0 of 2 questions.")
    cells = run.cells(rows, full)
    assert cells[1:] == ["100.0", "0.0"]  # calls right, irrelevance right: the run's own
    real[rows[0]["question"]] = {"category": "live_irrelevance", "right": True}
    assert "for 1 of 2" in run.agreement("validate", rows, full)


def test_a_lower_value_is_derived_only_from_the_questions_asked_again_at_it(monkeypatch) -> None:
    def outcome(system: str, tag: str, question: str, right: bool) -> dict:
        return {"model": "m", "half": "validate", "system": system, "tag": tag,
                "question": question, "category": "simple_python", "right": right}  # fmt: skip

    dev = [outcome("parlay", "full", "q1", False), outcome("parlay", "full", "q2", True)]
    dev.append(outcome("parlay:lower", "patch", "q1", True))
    monkeypatch.setitem(knob.FULL_RUNS, ("m", "validate"), ("parlay", "full", 0.75))
    monkeypatch.setitem(knob.PATCH_RUNS, ("m", "validate"), ("parlay:lower", "patch", 0.7))
    ran, full, lowest = knob.full_run(dev, "m", "validate")
    assert lowest == 0.7 and {q: o["right"] for q, o in full.items()} == {"q1": True, "q2": True}
    assert ran["q1"]["right"] is False  # the run as it ran, shown as such
    monkeypatch.delitem(knob.PATCH_RUNS, ("m", "validate"))
    ran, full, lowest = knob.full_run(dev, "m", "validate")
    assert lowest == 0.75 and full == ran and full["q1"]["right"] is False
