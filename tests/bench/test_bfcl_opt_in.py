"""The opt-in page: a rule asked with it on, paired with the shipped engine."""

from __future__ import annotations

from bench.bfcl.opt_in import paired, render


def outcome(system: str, category: str, question: str, right: bool, **extra: object) -> dict:
    return {
        "model": "qwen",
        "half": "validate",
        "tag": "stop16",
        "system": system,
        "category": category,
        "question": question,
        "right": right,
        **extra,
    }


def test_categories_the_rule_cannot_change_are_the_shipped_engines() -> None:
    shipped = {
        "p1": outcome("parlay", "parallel_multiple", "p1", False),
        "i1": outcome("parlay", "live_irrelevance", "i1", True),
        "s1": outcome("parlay", "simple_python", "s1", True),  # not asked with the rule on
    }
    on = {"p1": outcome("parlay:recount", "parallel_multiple", "p1", True)}
    pairs = paired("recount_calls", on, shipped)
    # live_irrelevance is copied; a call category the variant was not asked is left out.
    assert set(pairs) == {"p1", "i1"}
    assert pairs["i1"] == (shipped["i1"], shipped["i1"])


def test_the_page_counts_where_the_rule_acted_and_its_gain() -> None:
    outcomes = [outcome("parlay", "parallel_multiple", f"p{n}", False) for n in range(20)] + [
        outcome("parlay:recount", "parallel_multiple", f"p{n}", n < 8, rules=["recount_calls"])
        for n in range(10)
    ]
    outcomes += [
        outcome("parlay:recount", "parallel_multiple", f"p{n}", False) for n in range(10, 20)
    ]
    page = render(outcomes, ["stop16"])
    row = next(line for line in page.splitlines() if line.startswith("| recount_calls"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:4] == ["20", "10", "8 / 0"]
    assert cells[5].startswith("+40.0") and cells[6] == "earns its place"
    assert "## qwen, validate half" in page
