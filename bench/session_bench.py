"""Session overhead per turn: all of parlay's code, no model (a backend that answers at once).

python bench/session_bench.py
"""

from __future__ import annotations

import asyncio
import time

from _table import markdown_table, write_result

from parlay import ScriptedBackend, Session

TURNS = 1_000
CHECKPOINTS = (1, 10, 100, 1_000)
WINDOW = 20


def checkpoints_row(times: list[float]) -> list[str]:
    cells = []
    for turn in CHECKPOINTS:
        window = times[max(0, turn - WINDOW) : turn]
        cells.append(f"{sorted(window)[len(window) // 2] * 1e3:.3f} ms")
    return cells


def sync_turns() -> list[float]:
    session = Session(ScriptedBackend(lambda request: "ok"))
    times = []
    for i in range(TURNS):
        started = time.perf_counter()
        assert session.chat(f"turn {i}").value == "ok"
        times.append(time.perf_counter() - started)
    assert len(session.ctx) == 2 * TURNS
    return times


async def async_turns() -> list[float]:
    session = Session(ScriptedBackend(lambda request: "ok"))
    times = []
    for i in range(TURNS):
        started = time.perf_counter()
        thunk = await session.achat(f"turn {i}")
        assert thunk.value == "ok"
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    sync_times = sync_turns()
    async_times = asyncio.run(async_turns())
    headers = ["code path", *[f"turn {t:,}" for t in CHECKPOINTS]]
    rows = [
        ["sync: session.chat(...).value", *checkpoints_row(sync_times)],
        ["async: await session.achat(...)", *checkpoints_row(async_times)],
    ]
    table = markdown_table(headers, rows)
    print(table)
    path = write_result(
        "session",
        "Session overhead per turn (no model)",
        [
            (
                f"Median of the {WINDOW} turns up to each turn number; {TURNS:,} turns in one session",
                "Each turn renders the whole context, builds the request, streams the backend's "
                "events into a ModelOutputThunk and inserts the turn. Target: under 1 ms at turn "
                "1,000.\n\n" + table,
            )
        ],
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
