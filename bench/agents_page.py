"""bench/results/agents.md from the rows bench/agents.py keeps: a line per cell, then the
completion rate per client and model, and turn 2's time to first token against turn 1's."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import median
from typing import Any

from bench._table import markdown_table, write_result

# The proxy's headers that say what a request cost against the window, when it sends them.
TOKENS = ("x-parlay-prompt-tokens",)
WINDOW = "x-parlay-context-window"
SHRUNK = "x-parlay-shrunk"


def _first_header(requests: list[dict[str, Any]], names: tuple[str, ...]) -> str:
    for request in requests:
        for name in names:
            if name in request["headers"]:
                return str(request["headers"][name])
    return ""


def _fit(requests: list[dict[str, Any]]) -> str:
    tokens = _first_header(requests, TOKENS)
    window = _first_header(requests, (WINDOW,))
    if not tokens:
        return f"small / {window}" if window else "?"
    count, _, how = tokens.partition("; ")
    shown = count if how == "tokenizer" else f"~{count}"
    return f"{shown} / {window}" if window else shown


def _shrunk(requests: list[dict[str, Any]]) -> str:
    kinds = {r["headers"].get(SHRUNK, "") for r in requests} - {""}
    return ", ".join(sorted(kinds)) or "nothing"


def _errors(requests: list[dict[str, Any]]) -> str:
    statuses = [str(r["status"]) for r in requests if r["status"] >= 400]
    return ", ".join(statuses) or "0"


def _ttft(requests: list[dict[str, Any]]) -> str:
    firsts = [r["first_content_s"] for r in requests if r["status"] < 400]
    return " / ".join("-" if t is None else f"{t:.0f}" for t in firsts[:6]) or "-"


def cell_rows(rows: list[dict[str, Any]]) -> list[list[object]]:
    out: list[list[object]] = []
    for row in sorted(rows, key=lambda r: (r["model"], r["client"], r["task"])):
        requests = row["requests"]
        out.append([
            row["model"], f"{row['client']} {row['version']}", row["task"],
            "yes" if row["completed"] else "no", row["reason"] or "",
            len(requests), _errors(requests), _fit(requests), _shrunk(requests),
            _ttft(requests), row["seconds"],
        ])  # fmt: skip
    return out


def rates(rows: list[dict[str, Any]]) -> list[list[object]]:
    cells: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in rows:
        cells[(row["model"], row["client"])].append(bool(row["completed"]))
    return [[model, client, f"{sum(done)} of {len(done)}"]
            for (model, client), done in sorted(cells.items())]  # fmt: skip


def turn_ratio(rows: list[dict[str, Any]]) -> str:
    """Median of turn 2's time to first token over turn 1's, over cells with both: the
    client's own turns only (those the engine fitted to the window; a title request
    without tools is another conversation)."""
    ratios = []
    for row in rows:
        firsts = [r["first_content_s"] for r in row["requests"]
                  if r["status"] < 400 and WINDOW in r["headers"]]  # fmt: skip
        if len(firsts) >= 2 and firsts[0] and firsts[1] is not None:
            ratios.append(firsts[1] / firsts[0])
    if not ratios:
        return "no cell had two answered turns of its own (the model called no tool)."
    return (f"median {median(ratios):.2f} over {len(ratios)} cells "
            f"(lowest {min(ratios):.2f}, highest {max(ratios):.2f}).")  # fmt: skip


def _ratio(first: float | None, second: float | None) -> str:
    return f"{second / first:.2f}" if first and second is not None else "-"


def cache_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "Not measured yet: `python -m bench.agents --cache`."
    lines = []
    for row in sorted(rows, key=lambda r: r["model"]):
        one, two = (next(t for t in row["turns"] if t["turn"] == n) for n in ("turn 1", "turn 2"))
        lines.append([row["model"], one["tokens"], two["tokens"], two.get("cached", "-"),
                      one.get("first_token_s", "-"), two.get("first_token_s", "-"),
                      _ratio(one.get("first_token_s"), two.get("first_token_s")),
                      one["seconds"], two["seconds"], _ratio(one["seconds"], two["seconds"])])  # fmt: skip
    headers = ["model", "turn 1 tokens", "turn 2 tokens", "turn 2 from cache",
               "model's first token, turn 1 (s)", "turn 2 (s)", "ratio",
               "first content, turn 1 (s)", "turn 2 (s)", "ratio"]  # fmt: skip
    return markdown_table(headers, lines)


def write_page(
    rows: list[dict[str, Any]],
    cache: list[dict[str, Any]] | None = None,
    knob_off: list[dict[str, Any]] | None = None,
) -> Path:
    headers = ["model", "client", "task", "done", "why not", "requests", "4xx/5xx",
               "tokens / window", "shrunk", "first token per turn (s)", "seconds"]  # fmt: skip
    return write_result(
        "agents",
        "Agent clients on real local models through parlay serve",
        [
            (
                "What ran",
                "Each client does three small real tasks through `parlay serve` "
                "(prompted) in front of the embedded model, recorded by a relay between the "
                "client and the proxy. `python -m bench.agents`; rows in agents.jsonl.",
            ),
            ("Completion", markdown_table(["model", "client", "done"], rates(rows))),
            (
                "Turn 2 against turn 1",
                "Claude Code's recorded first request (2.1.197, 24 tools), then the same "
                "conversation one turn on (a Bash call and its result): seconds to the model's "
                "first token (its prompt cache at work: turn 2 reads only what is new), and to the "
                "client's first content, which also waits for the whole reply (the engine "
                "checks a reply before it goes out), on a machine shared with other work:\n\n"
                + cache_table(cache or [])
                + "\n\nIn the cells below, the client's own second request against its "
                "first: " + turn_ratio(rows),
            ),
            ("Every cell", markdown_table(headers, cell_rows(rows))),
            (
                "The same cells with --min-call-confidence 0",
                "The one knob's default (0.7) "
                "was set on single questions (bench/results/bfcl-knob.md); an agent's turns "
                "have many tools, and below the knob the model is asked for words instead of "
                "its call. Same clients, tasks and server, the knob off "
                "(`agents-knob0.jsonl`):\n\n"
                + markdown_table(["model", "client", "done"], rates(knob_off or []))
                + "\n\n"
                + markdown_table(headers, cell_rows(knob_off or [])),
            ),
        ],
    )
