"""Context costs: O(1) insert with a fork at every step, and linear rendering.

python bench/context_bench.py
"""

from __future__ import annotations

import gc
import time

from _table import markdown_table, write_result

from parlay import AssistantMessage, Context, UserMessage

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
        ],
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
