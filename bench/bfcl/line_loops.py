"""What the loop guard's line reading changes: the shipped engine's replies that ran to
the token cap, asked again with it, beside their stored outcomes.

The line reading (`RepetitionLimit.line_chars`) can only act on a reply that repeats
one piece for 300 characters in a line. Such a reply runs to the token budget, so the
questions it can change are those whose stored outcome spent about the whole budget:
they are asked again, with some that did not (controls: the guard should not act on
them). Everything else is taken to be unchanged.

    python -m bench.bfcl.line_loops --select          # writes the question lists
    flock /tmp/parlay-model.lock nice -n 5 python -m bench.bfcl.dev --models smollm2 \\
        --half both --per-category 25 --systems parlay --tag stop20 \\
        --questions bench/results/line-loops-smollm2.txt --store bench/results/line-loops.jsonl
    # the same for qwen at --per-category 40
    python -m bench.bfcl.line_loops                   # the page
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.stats import wilson

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-dev.jsonl"
AGAIN = RESULTS / "line-loops.jsonl"
PAGE = RESULTS / "line-loops.md"
BEFORE_TAG = "stop16"
# The engine's token budget on each model's attempts: an outcome that spent this much
# or more ran to the cap at least once.
CAPPED = {"smollm2": 1000, "qwen": 2000}
CONTROLS = 10


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def before(model: str) -> dict[str, dict[str, Any]]:
    return {
        r["question"]: r
        for r in read(STORE)
        if r["model"] == model and r["system"] == "parlay" and r.get("tag") == BEFORE_TAG
    }


def capped(outcome: dict[str, Any]) -> bool:
    return (outcome["completion_tokens"] or 0) >= CAPPED[outcome["model"]]


def select(model: str) -> list[str]:
    """The capped questions, and `CONTROLS` others chosen by the hash of their id."""
    outcomes = before(model)
    chosen = [q for q, r in outcomes.items() if capped(r)]
    others = sorted(
        (q for q, r in outcomes.items() if not capped(r)),
        key=lambda q: hashlib.sha256(q.encode()).hexdigest(),
    )
    return chosen + others[:CONTROLS]


def row(label: str, pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    n = len(pairs)
    if not n:
        return f"| {label} | 0 | | | | | | | |"

    def share(count: int) -> str:
        interval = wilson(count, n)
        return f"{count} ({100 * interval.low:.0f}–{100 * interval.high:.0f} %)"

    right = [sum(bool(p[i]["right"]) for p in pairs) for i in (0, 1)]
    tokens = [sum(p[i]["completion_tokens"] or 0 for p in pairs) for i in (0, 1)]
    # A reply the guard stops ends before the server's count of tokens arrives.
    unknown = sum(p[1]["completion_tokens"] is None for p in pairs)
    seconds = [[p[i]["seconds"] for p in pairs] for i in (0, 1)]
    same = sum(p[0]["right"] == p[1]["right"] for p in pairs)
    uncapped = sum(not capped(p[1]) for p in pairs)
    return (
        f"| {label} | {n} | {uncapped} | {share(right[0])} | {share(right[1])} | {same} "
        f"| {tokens[0]:,} → {tokens[1]:,}{f' ({unknown} unknown)' if unknown else ''} | {sum(seconds[0]):,.0f} → {sum(seconds[1]):,.0f} "
        f"| {statistics.median(seconds[0]):.1f} → {statistics.median(seconds[1]):.1f} |"
    )


def page() -> str:
    again = read(AGAIN)
    lines = [
        "# The loop guard reading lines: the capped replies asked again",
        "",
        (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "",
        f"Before: the shipped engine's outcomes (tag `{BEFORE_TAG}`, `bfcl-dev.jsonl`). After: "
        "the same questions, the same way, on the commit that added the line reading "
        "(`line-loops.jsonl`). under the cap: questions that no longer spent the budget. "
        "right: counts (95 % Wilson interval); same: questions right or wrong both times.",
        "",
        "| model / questions | n | under the cap | right before | right after | same | completion "
        "tokens | seconds | median seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for model in CAPPED:
        old = before(model)
        new = {r["question"]: r for r in again if r["model"] == model}
        pairs = [(old[q], new[q]) for q in new if q in old]
        lines.append(row(f"{model}, capped before", [p for p in pairs if capped(p[0])]))
        lines.append(row(f"{model}, controls", [p for p in pairs if not capped(p[0])]))
        total = sum(r["seconds"] for r in old.values())
        capped_seconds = sum(r["seconds"] for r in old.values() if capped(r))
        lines.append(
            f"| {model}, whole run before | {len(old)} | | | | | | {total:,.0f} "
            f"(capped: {capped_seconds:,.0f}) | |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--select", action="store_true", help="write the question lists")
    args = parser.parse_args(argv)
    if args.select:
        for model in CAPPED:
            path = RESULTS / f"line-loops-{model}.txt"
            path.write_text("\n".join(select(model)) + "\n")
            print(f"{path}: {len(select(model))} questions")
        return
    text = page()
    PAGE.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
