"""Agent clients doing small real tasks through `parlay serve` in front of a real local
model, prompted: does the client's request fit the model's window, what was shrunk, was
the task done (checked on disk and in the answer), why not, how many requests, time to
first token per turn, seconds. Writes bench/results/agents.md.

    python -m bench.agents                       # every cell not yet run
    python -m bench.agents --models smollm2 --clients codex --tasks "read a file"
    python -m bench.agents --page                # the page from the rows kept so far

Resumable: each finished cell is a line of bench/results/agents.jsonl, and a run skips
the cells already there (`--again` runs them anew). Not part of CI: a cell takes minutes
on two cores. Qwen2.5-Coder-0.5B needs its packages (`parlay models` says which).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench._table import RESULTS
from bench.agent_clients import CLIENTS, TASKS, Client, Task
from bench.agent_relay import Exchange, Relay

# Another file for a probe that must not replace the page's rows (a setting tried, say).
ROWS = Path(os.environ.get("PARLAY_BENCH_AGENTS_ROWS") or RESULTS / "agents.jsonl")
CACHE_ROWS = RESULTS / "agents-cache.jsonl"
# The same cells with `--min-call-confidence 0` (PARLAY_SERVE_MIN_CALL_CONFIDENCE=0 and
# PARLAY_BENCH_AGENTS_ROWS pointing here): does the knob cost agents their calls?
PROBE_ROWS = RESULTS / "agents-knob0.jsonl"
MODELS = ("smollm2", "qwen2.5-coder")
CELL_TIMEOUT = 10 * 60.0


def model_file(name: str) -> Path:
    from parlay.backends.catalogue import embedded_model

    model = embedded_model(name)
    if model is None:
        raise SystemExit(f"unknown embedded model {name!r}")
    return model.locate()


@contextmanager
def served(model: str, log: Path) -> Iterator[str]:
    """`parlay serve` (the embedded model, prompted) on a free port until the block ends."""
    from bench.agent_relay import _free_port

    port = _free_port()
    env = {**os.environ, "PARLAY_LOCAL_MODEL": str(model_file(model)),
           "PARLAY_LOG_DB": str(log.with_suffix(".db"))}  # fmt: skip
    command = [sys.executable, "-m", "parlay.cli.app", "serve", "--port", str(port),
               "--log-level", "debug"]  # fmt: skip
    with log.open("w") as sink:
        proc = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url, proc, log)
            yield url
        finally:
            proc.terminate()
            proc.wait(30)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until it answers /health and has said the model is loaded (it loads in the
    background at start, so a cell's first request does not carry the load)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"parlay serve exited with {proc.returncode}: see {log}")
        try:
            healthy = httpx.get(url + "/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            healthy = False
        if healthy and "; ready" in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise SystemExit("parlay serve was not ready within 300 s")


def run_cell(relay: Relay, client: Client, task: Task, model: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="parlay-agents-") as folder:
        work, home = Path(folder) / "work", Path(folder) / "home"
        work.mkdir()
        home.mkdir()
        for name, text in task.files.items():
            (work / name).write_text(text)
        relay.take()
        started = time.monotonic()
        run = client.run(relay.url, task.prompt, work, home, CELL_TIMEOUT)
        seconds = time.monotonic() - started
        exchanges = relay.take()
        missing = task.check(work, run.answer)
        files = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
    # Only the API's routes: Claude Code's `HEAD /` probe gets a 404 it ignores.
    exchanges = [e for e in exchanges if e.path.startswith("/v1/")]
    reason = _reason(run.returncode, missing, exchanges, run.log)
    return {
        "client": client.name,
        "version": client.version(),
        "model": model,
        "task": task.name,
        "completed": not reason,
        "reason": reason,
        "seconds": round(seconds, 1),
        "answer": run.answer[-600:],
        "files": files[:20],  # what the work folder held after the run
        "requests": [e.as_row() for e in exchanges],
    }


def _reason(code: int | None, missing: str, exchanges: list[Exchange], log: str) -> str:
    failed = [e for e in exchanges if e.status >= 400]
    if code is None:
        return "timed out"
    if not missing:
        return ""
    if failed:
        return f"HTTP {failed[-1].status}: {failed[-1].error[:160]}"
    if code != 0:
        return f"exit {code}: {log.strip().splitlines()[-1][:160] if log.strip() else ''}"
    return missing


def load_rows(path: Path = ROWS) -> list[dict[str, Any]]:
    """The rows kept, the last run of each cell only (`--again` appends a newer one)."""
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return list({(r["client"], r["model"], r["task"]): r for r in rows}.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--clients", nargs="*", default=[c.name for c in CLIENTS])
    parser.add_argument("--tasks", nargs="*", default=[t.name for t in TASKS])
    parser.add_argument("--again", action="store_true", help="run cells already kept")
    parser.add_argument("--page", action="store_true", help="only write the page")
    parser.add_argument("--cache", action="store_true",
                        help="only time turn 2 against turn 1 (bench/agents_cache.py)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.cache:
        run_cache(args.models)
    elif not args.page:
        run_all(args)
    from bench.agents_page import write_page

    print(write_page(load_rows(), load_cache_rows(), load_rows(PROBE_ROWS)))


def run_cache(models: list[str]) -> None:
    from bench.agents_cache import measure

    for model in models:
        log = Path(tempfile.gettempdir()) / f"parlay-agents-cache-{model}.log"
        with served(model, log) as url:
            row = {"model": model, **measure(url, log)}
        print(row, flush=True)
        with CACHE_ROWS.open("a") as out:
            out.write(json.dumps(row) + "\n")


def load_cache_rows() -> list[dict[str, Any]]:
    """The last prompt-cache measurement of each model."""
    if not CACHE_ROWS.is_file():
        return []
    rows = [json.loads(line) for line in CACHE_ROWS.read_text().splitlines() if line.strip()]
    return list({r["model"]: r for r in rows}.values())


def run_all(args: argparse.Namespace) -> None:
    done = {(r["client"], r["model"], r["task"]) for r in load_rows()}
    by_name = {c.name: c for c in CLIENTS}
    clients = [by_name[name] for name in args.clients if name in by_name]  # in the order asked
    tasks = [t for t in TASKS if t.name in args.tasks]
    for model in args.models:
        cells = [(c, t) for c in clients for t in tasks
                 if args.again or (c.name, model, t.name) not in done]  # fmt: skip
        if not cells:
            continue
        log = Path(tempfile.gettempdir()) / f"parlay-agents-{model}.log"
        with served(model, log) as url:
            relay = Relay(url).start()
            try:
                for client, task in cells:
                    print(f"{model} / {client.name} / {task.name} ...", flush=True)
                    row = run_cell(relay, client, task, model)
                    print(
                        f"  {'done' if row['completed'] else row['reason']}"
                        f" ({row['seconds']} s, {len(row['requests'])} requests)",
                        flush=True,
                    )
                    with ROWS.open("a") as out:
                        out.write(json.dumps(row) + "\n")
            finally:
                relay.stop()


if __name__ == "__main__":
    main()
