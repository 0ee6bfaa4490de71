"""Requirements checked and repaired, measured: the share of 30 small tasks whose
requirements all hold at budget 1, 2 and 3 for each strategy, and what it cost (model
requests, seconds), on the embedded models; Mellea's own `instruct` with its
`RejectionSamplingStrategy` beside it, on the same llama.cpp server.

    python -m bench.requirements --model smollm2          # run (resumes), then the page
    python -m bench.requirements --model qwen2.5-coder
    python -m bench.requirements --mellea /tmp/mellea-venv/bin/python --model smollm2
    python -m bench.requirements --page                   # the page from what is done

Each cell (model, system, strategy, task) runs once at budget 3 and is kept in
bench/results/requirements.jsonl. Budgets 1 and 2 are read from the first one and two
attempts: a later attempt depends only on the earlier ones (fresh tries are seeded, a
repair sees only its branch), and RejectionSampling and Repair stop at the first
attempt that holds, so the first k attempts of a budget-3 run are the run at budget k.
Only code-checked requirements: a 135M judge would measure the judge, not the strategy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bfcl.stats import wilson
from bench.requirements_tasks import TASKS, TOOLS, Task
from parlay import BestOfN, GenerationOptions, RejectionSampling, Repair, Session, req
from parlay.requirements import Requirement

RESULTS = Path(__file__).parent / "results"
CELLS = RESULTS / "requirements.jsonl"
PAGE = RESULTS / "requirements.md"
BUDGET = 3
MAX_TOKENS = 48
TEMPERATURE = 0.8

STRATEGIES: dict[str, Callable[[int], Any]] = {
    "RejectionSampling": lambda b: RejectionSampling(b, temperature=TEMPERATURE),
    "Repair": lambda b: Repair(b),
    "BestOfN": lambda b: BestOfN(b, temperature=TEMPERATURE),
}


def requirements_of(task: Task) -> list[Requirement]:
    return [req(rule.description, rule.check) for rule in task.rules]


def done_cells() -> set[tuple[str, str, str, str]]:
    if not CELLS.exists():
        return set()
    rows = [json.loads(line) for line in CELLS.read_text().splitlines() if line.strip()]
    return {(r["model"], r["system"], r["strategy"], r["task"]) for r in rows}


def record(row: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    with CELLS.open("a") as out:
        out.write(json.dumps(row) + "\n")


def local_backend(model: str) -> tuple[Any, str]:
    """The embedded model behind the engine, and its llama.cpp server's URL."""
    from parlay.backends.catalogue import embedded_model
    from parlay.backends.local import LocalBackend, shared_server
    from parlay.start import embedded_stack

    found = embedded_model(model)
    assert found is not None, model
    local = LocalBackend(found.locate())
    local.load()
    url = shared_server(local.model_path, local.window.tokens).start()
    return embedded_stack(local), url


def run_cell(backend: Any, task: Task, strategy: str) -> dict[str, Any]:
    tools = [TOOLS[task.tool]] if task.tool else []
    options = GenerationOptions(max_tokens=MAX_TOKENS, temperature=0)
    session = Session(backend, tools=tools, options=options)
    started = time.monotonic()
    reply = session.instruct(
        task.description,
        requirements=requirements_of(task),
        strategy=STRATEGIES[strategy](BUDGET),
        run_tools=task.tool is not None,
        chain_limit=2,
    )
    result = reply.sampling
    seconds = time.monotonic() - started
    attempts = [
        {
            "passed": a.passed,
            "met": a.met,
            "requests": 1 + sum(m.role == "assistant" for m in a.thunk.steps),
            "seconds": (a.thunk.duration_ms or 0) / 1000,
            "text": a.value[:300],
        }
        for a in result.attempts
    ]
    return {"seconds": seconds, "attempts": attempts}


def run(model: str, strategies: list[str], minutes: float | None) -> None:
    """The cells not yet done; with `minutes`, no new cell starts after that long (the
    machine is shared: model time is budgeted, and the run resumes where it stopped)."""
    done = done_cells()
    todo = [(s, t) for s in strategies for t in TASKS if (model, "parlay", s, t.name) not in done]
    if not todo:
        return
    backend, _ = local_backend(model)
    stop = time.monotonic() + 60 * minutes if minutes else None
    for strategy, task in todo:
        if stop is not None and time.monotonic() > stop:
            print("out of time: run again to go on", flush=True)
            return
        try:
            cell = run_cell(backend, task, strategy)
        except Exception as error:  # a cell that fails is a result, not the end of the run
            cell = {"seconds": 0.0, "attempts": [], "error": f"{type(error).__name__}: {error}"}
        record({"model": model, "system": "parlay", "strategy": strategy, "task": task.name,
                "kind": task.kind, **cell})  # fmt: skip
        print(model, strategy, task.name, [a["passed"] for a in cell["attempts"]], flush=True)


def run_mellea(model: str, python: str) -> None:
    """Mellea's instruct + RejectionSamplingStrategy on the same server, in its own venv."""
    done = done_cells()
    names = [t.name for t in TASKS if (model, "mellea", "RejectionSampling", t.name) not in done]
    if not names:
        return
    _, url = local_backend(model)
    script = Path(__file__).parent / "requirements_mellea.py"
    root = Path(__file__).parent.parent
    subprocess.run(
        [python, str(script), "--url", url, "--model", model, "--out", str(CELLS),
         "--budget", str(BUDGET), "--max-tokens", str(MAX_TOKENS),
         "--temperature", str(TEMPERATURE), *names],
        check=True, cwd=root,
    )  # fmt: skip


# -- the page -----------------------------------------------------------------------------


def at_budget(row: dict[str, Any], k: int) -> tuple[bool, int, float]:
    """Whether the cell held with k attempts, and the requests and seconds they took."""
    attempts = row["attempts"][:k]
    if not attempts:
        return False, 0, 0.0
    held = any(a["passed"] for a in attempts)
    requests = sum(a["requests"] for a in attempts)
    seconds = sum(a["seconds"] for a in attempts)
    return held, requests, seconds


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells that ran (a skipped one is not a failure: it was never asked)."""
    return [r for r in rows if not str(r.get("error", "")).startswith("skipped")]


def summary(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| model | system | strategy | budget | all requirements hold (95 % interval) "
        "| requests / task | seconds / task |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["model"], r["system"], r["strategy"]) for r in rows})
    for model, system, strategy in keys:
        cells = [
            r for r in rows if (r["model"], r["system"], r["strategy"]) == (model, system, strategy)
        ]
        for k in (1, 2, 3):
            measured = [at_budget(r, k) for r in cells]
            share = wilson(sum(h for h, _, _ in measured), len(measured))
            requests = sum(q for _, q, _ in measured) / len(measured)
            seconds = sum(s for _, _, s in measured) / len(measured)
            lines.append(
                f"| {model} | {system} | {strategy} | {k} | {share.render()} "
                f"({share.hits:.0f}/{share.n}) | {requests:.2f} | {seconds:.1f} |"
            )
    return lines


def by_kind(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| model | system | strategy | kind | budget 1 | budget 3 |",
        "|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["model"], r["system"], r["strategy"], r["kind"]) for r in rows})
    for model, system, strategy, kind in keys:
        cells = [
            r
            for r in rows
            if (r["model"], r["system"], r["strategy"], r["kind"])
            == (model, system, strategy, kind)
        ]
        one = sum(at_budget(r, 1)[0] for r in cells)
        three = sum(at_budget(r, 3)[0] for r in cells)
        lines.append(
            f"| {model} | {system} | {strategy} | {kind} | {one}/{len(cells)} | {three}/{len(cells)} |"
        )
    return lines


def page() -> str:
    rows = [json.loads(line) for line in CELLS.read_text().splitlines() if line.strip()]
    errors = [r for r in rows if r.get("error")]
    ran = measured(rows)
    # Every model Mellea ran on, on the tasks it ran (those without a tool).
    mellea_models = {r["model"] for r in ran if r["system"] == "mellea"}
    beside = [r for r in ran if r["model"] in mellea_models and r["kind"] != "tool"
              and r["strategy"] == "RejectionSampling"]  # fmt: skip
    parts = [
        "# Requirements checked and repaired (issue 50)",
        "",
        "Written by `python -m bench.requirements --page` from bench/results/requirements.jsonl.",
        "",
        "30 small tasks (bench/requirements_tasks.py): 6 with length limits, 10 with words",
        "that must or must not appear, 8 asking for JSON with given fields, 6 asking for a",
        "fact only a tool's result has (plus a length limit). Every requirement is checked",
        "by code. parlay: `session.instruct(task, requirements=[req(text, check)],",
        f"strategy=...)` with max_tokens {MAX_TOKENS}, the first attempt greedy; later fresh",
        f"attempts (RejectionSampling, BestOfN) at temperature {TEMPERATURE}, each its own",
        "seed; Repair continues the failed attempt's branch with a message naming what",
        "failed. Each cell ran once at budget 3; budgets 1 and 2 are its first one and two",
        "attempts (see the module docstring for why that is the same run). Requests are",
        "model requests (a tool round is one more); seconds are the attempts' own time.",
        "Intervals: 95 % Wilson (bench/bfcl/stats.py).",
        "",
        *summary(ran),
        "",
        "## Beside Mellea: the same 24 tasks without a tool, the same llama.cpp server",
        "",
        *summary(beside),
        "",
        "## By kind of task",
        "",
        *by_kind(ran),
        "",
    ]
    if errors:
        parts += ["## Cells that did not run, or failed", ""]
        parts += [
            f"- {r['model']} {r['system']} {r['strategy']} {r['task']}: {r['error']}"
            for r in errors
        ]
        parts.append("")
    notes = Path(__file__).parent / "requirements_notes.md"
    if notes.exists():
        parts += [notes.read_text()]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None)
    parser.add_argument("--mellea", default=None, help="the python of Mellea's venv")
    parser.add_argument("--page", action="store_true")
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    parser.add_argument("--minutes", type=float, default=None)
    args = parser.parse_args()
    if args.model and args.mellea:
        run_mellea(args.model, args.mellea)
    elif args.model:
        run(args.model, args.strategies, args.minutes)
    PAGE.write_text(page())
    print(PAGE.read_text())


if __name__ == "__main__":
    main()
