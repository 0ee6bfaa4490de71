"""The results page renders from a store alone: systems side by side per half."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.bfcl import dev
from bench.bfcl.report import Cell, labels, render
from bench.bfcl.split import half_of
from syrupy.assertion import SnapshotAssertion

SYSTEMS = ("parlay", "naive", "toolproxy", "llama.cpp")


def outcome(
    system: str, category: str, qid: str, right: bool, *, calls: int = 1, **more: Any
) -> dict[str, Any]:
    return {
        "model": "qwen",
        "system": system,
        "config": more.pop("config", f"cfg-{system}"),
        "category": category,
        "question": qid,
        "half": half_of(qid),
        "commit": "abc1234",
        "right": right,
        "well_formed": calls > 0,
        "abstained": calls == 0,
        "error_type": "" if right else "value_error:others",
        "seconds": more.pop("seconds", 2.0),
        **more,
    }


def ids(category: str, half: str, n: int) -> list[str]:
    found = (f"{category}_{i}" for i in range(1000))
    return [qid for qid in found if half_of(qid) == half][:n]


def synthetic() -> list[dict[str, Any]]:
    """Per half: 6 multiple, 4 live_parallel, 6 live_irrelevance, 2 live_relevance.
    parlay is right on most; on the tune half it is right on every parallel question and
    on none of them on validate (the halves part there)."""
    out = []
    for half in ("tune", "validate"):
        for index, qid in enumerate(ids("multiple", half, 6)):
            for rank, system in enumerate(SYSTEMS):
                out.append(outcome(system, "multiple", qid, index >= rank + 1))
        for qid in ids("live_parallel", half, 4):
            out.append(outcome("parlay", "live_parallel", qid, half == "tune"))
            out.append(outcome("naive", "live_parallel", qid, False, calls=0))
        for index, qid in enumerate(ids("live_irrelevance", half, 6)):
            for rank, system in enumerate(SYSTEMS):
                right = index >= rank
                out.append(outcome(system, "live_irrelevance", qid, right, calls=0 if right else 1))
        for qid in ids("live_relevance", half, 2):
            out.append(outcome("parlay", "live_relevance", qid, True, seconds=4.0))
    # toolproxy ran one multiple question more than the others: it is left out.
    out.append(outcome("toolproxy", "multiple", ids("multiple", "validate", 7)[-1], True))
    return out


def test_the_page_renders_from_a_small_store(snapshot: SnapshotAssertion) -> None:
    assert render(synthetic(), store="bench/results/synthetic.jsonl") == snapshot


def test_systems_are_scored_on_the_questions_all_of_them_answered() -> None:
    validate = [o for o in synthetic() if o["half"] == "validate"]
    cell = Cell(validate, labels(validate))
    assert len(cell.common("multiple")) == 6
    assert cell.share("toolproxy", ["multiple"], "right").n == 6
    # A system never run on a category does not shrink the others there.
    assert len(cell.common("live_parallel")) == 4


def test_a_variant_asked_on_part_of_a_category_does_not_shrink_the_others() -> None:
    validate = [o for o in synthetic() if o["half"] == "validate"]
    asked = ids("multiple", "validate", 6)[:2]
    validate += [outcome("parlay:few", "multiple", qid, True) for qid in asked]
    cell = Cell(validate, labels(validate))
    assert len(cell.common("multiple")) == 6
    assert cell.share("naive", ["multiple"], "right").n == 6
    assert cell.share("parlay:few", ["multiple"], "right").n == 0  # shown as nothing


def test_the_page_says_where_the_halves_part() -> None:
    page = render(synthetic())
    assert "Their intervals do not overlap on: qwen: parlay / live_parallel" in page


def test_two_configs_of_one_system_get_two_columns() -> None:
    rows = [
        outcome("parlay", "multiple", "multiple_1", True),
        outcome("parlay", "multiple", "multiple_1", False, config="new"),
    ]
    assert sorted(labels(rows).values()) == ["parlay [cfg-parlay]", "parlay [new]"]


def test_report_mode_rebuilds_the_page_without_running_anything(tmp_path: Path) -> None:
    store = tmp_path / "outcomes.jsonl"
    store.write_text("".join(json.dumps(o) + "\n" for o in synthetic()))
    page = tmp_path / "page.md"
    dev.main(["--report", "--store", str(store), "--page", str(page), "--models", "no-such-model"])
    assert page.read_text() == render(synthetic(), store=str(store))


def test_each_models_own_config_does_not_split_a_system_in_two_columns() -> None:
    qwen = outcome("parlay", "multiple", "multiple_1", True)
    smol = {
        **outcome("parlay", "multiple", "multiple_1", False),
        "model": "smollm2",
        "config": "other",
    }
    page = render([qwen, smol])
    assert "[cfg-parlay]" not in page and "[other]" not in page
    assert "| qwen | parlay | `cfg-parlay` | `abc1234` |" in page
    assert "| smollm2 | parlay | `other` | `abc1234` |" in page
