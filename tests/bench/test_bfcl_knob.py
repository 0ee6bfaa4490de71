"""The knob's page derives each threshold's outcome from the stored first replies."""

from __future__ import annotations

from bench.bfcl import before_after, knob


def outcome(category: str, right: bool, share: float | None, abstained: bool = False) -> dict:
    return {
        "question": f"{category}_{share}_{right}",
        "category": category,
        "right": right,
        "abstained": abstained,
        "answer_share": share,
    }


def test_a_call_at_or_over_the_threshold_becomes_an_abstention() -> None:
    wrong_call = outcome("live_irrelevance", False, 0.3)
    assert knob.right_under(wrong_call, 0.25) is True  # asked for words: it abstains
    assert knob.right_under(wrong_call, 0.35) is False  # sure enough: the call stands
    right_call = outcome("simple_python", True, 0.3)
    assert knob.right_under(right_call, 0.25) is False  # the knob's cost: a right call lost
    assert knob.right_under(right_call, None) is True
    answered = outcome("simple_python", False, 0.9, abstained=True)
    assert knob.right_under(answered, 0.1) is False  # a reply in words is left as it was


def test_the_rule_picks_the_best_balanced_score_on_the_half_it_is_given() -> None:
    found = [
        outcome("simple_python", True, 0.05),
        outcome("simple_python", True, 0.12),
        outcome("live_irrelevance", False, 0.2),
        outcome("live_irrelevance", True, None, abstained=True),
    ]
    # At 0.15 the irrelevant call becomes an abstention and both right calls stay.
    assert knob.best(found) == 0.15
    calls, irrelevance, balanced = knob.scores(found, 0.15)
    assert (calls.value, irrelevance.value, balanced.value) == (1.0, 1.0, 1.0)


def test_before_and_after_are_compared_on_the_questions_both_answered() -> None:
    rows = []
    for system, tag, right in (("parlay:typed", "stop23", False), ("parlay", "issue38", True)):
        for n in range(before_after.MIN_QUESTIONS + 5):
            category = "live_irrelevance" if n % 2 else "simple_python"
            rows.append({
                "model": "qwen", "half": "validate", "system": system, "tag": tag,
                "question": f"q{n}", "category": category, "right": right,
                "seconds": 2.0, "requests": 1 if tag == "issue38" else None,
            })  # fmt: skip
    rows += [{**row, "system": "naive", "tag": "stop13"} for row in rows[:22]]
    page = "\n".join(before_after.section(rows, "qwen"))
    assert "(22 questions)" in page
    assert "| after (issue 38) | 100.0" in page and "| 1.00 |" in page
    assert "| before (stop 23, typed) | 0.0" in page
