"""Context costs: O(1) insert with a fork at every step, linear rendering; keeping a
1,000-turn context in a file; `fork(at=n)` against n; replaying 20 conversations.

python bench/context_bench.py
"""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path

from _table import markdown_table, write_result
from session_bench import CONVERSATIONS, LATENCY_S, REPLAY_HEADERS, TURNS_EACH, replay_rows

from parlay import AssistantMessage, Context, ScriptedBackend, Session, UserMessage
from parlay.backends.scripted import calls

CHECKPOINTS = (1_000, 10_000, 100_000)
WINDOW = 1_000  # inserts timed around each checkpoint


def insert_with_forks(total: int) -> list[list[object]]:
    """Insert `total` items; at every step also fork (a second child of the same parent)."""
    ctx = Context()
    rows: list[list[object]] = []
    forks: list[Context] = []
    started = 0.0
    item = UserMessage("x")
    gc.disable()
    try:
        for i in range(1, total + 1):
            if i in {c - WINDOW + 1 for c in CHECKPOINTS}:
                started = time.perf_counter()
            forks.append(ctx.insert(AssistantMessage("fork")))
            ctx = ctx.insert(item)
            if i in CHECKPOINTS:
                elapsed = time.perf_counter() - started
                per_insert = elapsed / (2 * WINDOW)  # two inserts per step
                rows.append([f"{i:,}", f"{per_insert * 1e9:.0f} ns"])
    finally:
        gc.enable()
    assert len(ctx) == total and len(forks) == total
    # Each fork shares everything before it with the main line: nothing was copied.
    assert forks[-1].parent.parent is forks[-2].parent
    return rows


def render(sizes: tuple[int, ...]) -> list[list[object]]:
    rows: list[list[object]] = []
    for size in sizes:
        items = [UserMessage(str(i)) if i % 2 else AssistantMessage(str(i)) for i in range(size)]
        best = float("inf")
        for _ in range(5):
            ctx = Context(items)  # a fresh, never-rendered context each time
            started = time.perf_counter()
            messages = ctx.messages()
            best = min(best, time.perf_counter() - started)
        assert len(messages) == size
        rows.append([f"{size:,}", f"{best * 1e3:.2f} ms", f"{best / size * 1e9:.0f} ns"])
    return rows


KEPT_TURNS = 1_000


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def kept_session(turns: int) -> Session:
    """`turns` turns of a few sentences each; one in ten runs a tool."""

    def model(request):  # type: ignore[no-untyped-def]
        last = request.messages[-1]
        if last.role == "user" and last.content.startswith("add"):
            return calls(("add", {"a": 2, "b": 3}))
        return "An answer of a few sentences, as a model gives. " * 3

    session = Session(ScriptedBackend(model), tools=[add], system="You are terse.")
    for n in range(turns):
        prompt = "add two and three" if n % 10 == 0 else f"Question {n}: tell me more. " * 2
        session.chat(prompt, run_tools=True).value  # noqa: B018
    return session


def best(runs: int, action) -> float:  # type: ignore[no-untyped-def]
    fastest = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def keeping() -> list[list[str]]:
    session = kept_session(KEPT_TURNS)
    path = Path(tempfile.mkdtemp()) / "kept.json"
    text = session.ctx.to_json()
    assert Context.from_json(text).messages() == session.ctx.messages()
    rows = [
        ["to_json", f"{best(5, session.ctx.to_json) * 1e3:.1f} ms"],
        ["from_json", f"{best(5, lambda: Context.from_json(text)) * 1e3:.1f} ms"],
        ["session.save(path)", f"{best(5, lambda: session.save(path)) * 1e3:.1f} ms"],
        [
            "Session.load(path, backend)",
            f"{best(5, lambda: Session.load(path, session.backend)) * 1e3:.1f} ms",
        ],
        ["file size", f"{path.stat().st_size / 1024:.0f} KiB ({len(session.ctx):,} items)"],
    ]
    return rows


def forking() -> list[list[str]]:
    session = kept_session(KEPT_TURNS)
    rows = []
    for n in (1, 10, 100, 500, 1_000):
        fork = session.fork(at=n)
        assert len(fork.ctx.turns) == n and session.ctx.shares(fork.ctx)
        rows.append([f"{n:,}", f"{best(20, lambda n=n: session.fork(at=n)) * 1e6:.0f} µs"])
    return rows


def main() -> None:
    insert_with_forks(CHECKPOINTS[0])  # warm up
    # Best of 3 runs per size: the machine is shared and noisy.
    runs = [insert_with_forks(CHECKPOINTS[-1]) for _ in range(3)]
    insert_rows = [
        [size, min((run[i][1] for run in runs), key=lambda cell: float(cell.split()[0]))]
        for i, (size, _) in enumerate(runs[0])
    ]
    base = float(insert_rows[0][1].split()[0])
    for row in insert_rows:
        row.append(f"{float(row[1].split()[0]) / base:.2f}x")
    render_rows = render((1_000, 2_000, 5_000, 10_000))
    first = float(render_rows[0][2].split()[0])
    for row in render_rows:
        row.append(f"{float(row[2].split()[0]) / first:.2f}x")
    inserts = markdown_table(["context size", "cost per insert", "vs 1k"], insert_rows)
    renders = markdown_table(
        ["items", "render to messages", "per item", "per item vs 1k"], render_rows
    )
    print(inserts, "\n", renders, sep="\n")
    kept = markdown_table(["1,000 turns", "time / size"], keeping())
    forks = markdown_table(["fork(at=n), n =", "time (best of 20)"], forking())
    replays = markdown_table(REPLAY_HEADERS, replay_rows())
    print(kept, forks, replays, sep="\n\n")
    path = write_result(
        "context",
        "Context: insert with a fork at every step; rendering",
        [
            (
                f"Inserts ({CHECKPOINTS[-1]:,} steps, each step inserts one item and forks one)",
                "Mean over the 1,000 steps before each size. Flat means O(1).\n\n" + inserts,
            ),
            (
                "Rendering a fresh context to messages (best of 5)",
                "Flat per item means linear.\n\n" + renders,
            ),
            (
                f"Keeping a {KEPT_TURNS:,}-turn context (best of 5)",
                "A session of 1,000 chat turns on the scripted backend (answers of about 150 "
                "characters; one turn in ten runs a tool, so its output keeps the round "
                "before the answer). `to_json` / `from_json` in memory; `save` writes the "
                "file whole (a temporary file, then a rename), `load` reads and validates "
                "it.\n\n" + kept,
            ),
            (
                "fork(at=n) on the same 1,000-turn session",
                "`at_turn(n)` walks back once from the newest item to find turn n, so its "
                "cost follows the context's length, not n: flat here, and never a copy "
                "(the fork shares the node).\n\n" + forks,
            ),
            (
                f"Replaying {CONVERSATIONS} conversations of {TURNS_EACH} turns",
                "Best of 3. A loop of `session.replay()` against "
                "`replay_all(..., concurrency=n)`. On a backend that answers at once there is "
                "nothing to wait for: it is parlay's own code on one event loop, a few tens "
                "of milliseconds for the 100 turns whichever way (the differences between "
                "runs are the shared machine's noise). On one that takes "
                f"{LATENCY_S * 1000:.0f} ms per reply, as a model does, the waits overlap n "
                "at a time.\n\n" + replays,
            ),
        ],
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
