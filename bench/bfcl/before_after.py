"""The engine before and after a change, beside the naive baseline, with its cost.

    python -m bench.bfcl.before_after            # bench/results/bfcl-before-after.md

For each model, on the validate half's questions that every compared run answered: right
calls pooled, right abstentions on live_irrelevance, balanced (their mean, a system that
never calls scores 50), with 95 % intervals; and the cost, seconds and requests to the
model per question (requests are counted since the runs of issue 38; seconds depend on
what else the machine ran). A run still in progress is compared on what it answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table
from bench.bfcl.pages import balanced, cell, page_main, run_of

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-dev.jsonl"
PAGE = RESULTS / "bfcl-before-after.md"
# (label, system, tag) per model: the engine as last measured before issue 38, after it,
# and the naive prompt (the tag of its only run).
RUNS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "qwen": (
        ("before (stop 23, typed)", "parlay:typed", "stop23"),
        ("after (issue 38)", "parlay", "issue38"),
        ("naive", "naive", "*"),
    ),
    "smollm2": (
        ("before (stop 16, embedded)", "parlay", "stop16"),
        ("after (issue 38)", "parlay", "issue38"),
        ("naive", "naive", "*"),
    ),
}
Outcome = dict[str, Any]
# Fewer questions in common than this (a run just started): no section yet.
MIN_QUESTIONS = 20


def cost(found: list[Outcome]) -> tuple[str, str]:
    seconds = sum(o["seconds"] for o in found) / len(found)
    counted = [o["requests"] for o in found if o.get("requests") is not None]
    requests = f"{sum(counted) / len(counted):.2f}" if len(counted) == len(found) else "–"
    return f"{seconds:.1f}", requests


def section(rows: Sequence[Outcome], model: str) -> list[str]:
    runs = [
        (label, run_of(rows, model, "validate", system, tag)) for label, system, tag in RUNS[model]
    ]
    if not all(found for _, found in runs):
        return []
    common = set.intersection(*(set(found) for _, found in runs))
    if len(common) < MIN_QUESTIONS:
        return []
    table = []
    for label, found in runs:
        chosen = [found[q] for q in sorted(common)]
        pooled, abstained, score = balanced(chosen)
        table.append([label, cell(pooled), cell(abstained), cell(score), *cost(chosen)])
    header = [
        "run", "calls right", "live_irrelevance right", "balanced", "s / question",
        "requests / question",
    ]  # fmt: skip
    return [
        f"## {model}, validate half ({len(common)} questions)",
        "",
        markdown_table(header, table),
        "",
    ]


def render(rows: Sequence[Outcome]) -> str:
    lines = ["# The engine before and after issue 38, beside the naive prompt", ""]
    lines += [line.strip() for line in (__doc__ or "").splitlines()[4:10]]
    lines.append("")
    for model in RUNS:
        lines += section(rows, model)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    page_main(render, (__doc__ or "").splitlines()[0], STORE, PAGE, argv)


if __name__ == "__main__":
    main()
