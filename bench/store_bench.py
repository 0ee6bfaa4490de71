"""The SQLite log: cost of logging a turn, and writers in several processes at once.

    python bench/store_bench.py

Compares, in one run: a session turn without and with `log=`, and 1, 2 and 4 processes
writing responses (each with one tool call and result) into one fresh file at once,
counting the rows afterwards (every row must be there).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import markdown_table, write_result

from parlay import ScriptedBackend, Session
from parlay.store import Store

TURNS = 300
PER_PROCESS = 300
WRITERS = ["processes", "rows written", "rows found", "tool results", "none lost",
           "wall time (incl. start-up)", "rows per second"]  # fmt: skip

WRITER = """
import sys, time
from parlay.store import LoggedCall, LoggedResponse, LoggedResult, LoggedSession, Store
store, name, n = Store(sys.argv[1]), sys.argv[2], int(sys.argv[3])
session = LoggedSession(name, "", "bench", None, None, ("f",))
for i in range(n):
    call = LoggedCall(f"{name}-{i}", "f", {"i": i})
    store.add_response(
        LoggedResponse(name, str(i), prompt="p", calls=(call,),
                       results=(LoggedResult(call.call_id, "f", "out"),)),
        session,
    )
"""


def turn_cost(log: Store | None) -> float:
    session = Session(ScriptedBackend(lambda request: "ok"), log=log or False)
    assert session.chat("warm up").value == "ok"
    started = time.perf_counter()
    for i in range(TURNS):
        assert session.chat(f"turn {i}").value == "ok"
    return (time.perf_counter() - started) / TURNS


def processes(folder: Path, count: int) -> list[object]:
    path = folder / f"p{count}.db"
    started = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", str(PER_PROCESS)])
        for n in range(count)
    ]
    codes = [p.wait() for p in procs]
    elapsed = time.perf_counter() - started
    store = Store(path)
    rows = store.count("responses")
    expected = count * PER_PROCESS
    assert codes == [0] * count, codes
    return [
        count,
        expected,
        rows,
        store.count("tool_results"),
        "yes" if rows == expected else "NO",
        f"{elapsed:.2f} s",
        f"{expected / elapsed:.0f}/s",
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain = turn_cost(None)
        logged = turn_cost(Store(folder / "turns.db"))
        turns = markdown_table(
            ["session", "per turn", "logging adds"],
            [
                ["log=False", f"{plain * 1e3:.3f} ms", ""],
                ["log=Store(...)", f"{logged * 1e3:.3f} ms", f"{(logged - plain) * 1e3:.3f} ms"],
            ],
        )
        writers = markdown_table(WRITERS, [processes(folder, n) for n in (1, 2, 4)])
    print(turns, "\n")
    print(writers)
    path = write_result(
        "store",
        "The SQLite log",
        [
            (f"Cost of logging a turn ({TURNS} turns, scripted backend)", turns),
            (f"Processes writing at once ({PER_PROCESS} responses each, one new file)", writers),
        ],
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
