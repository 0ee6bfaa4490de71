"""Session overhead per turn: all of parlay's code, no model (a backend that answers at once);
and replaying 20 conversations, one after another against `replay_all` (written to
bench/results/context.md by context_bench.py).

python bench/session_bench.py
"""

from __future__ import annotations

import asyncio
import time

from _table import markdown_table, write_result

from parlay import Context, ScriptedBackend, Session, UserMessage, replay_all
from parlay.backends.scripted import reply_events

CONVERSATIONS = 20
TURNS_EACH = 5
LATENCY_S = 0.02  # a stand-in for a model's time to answer

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


class SlowScripted(ScriptedBackend):
    """The scripted backend, each reply after `delay` seconds (0: at once)."""

    def __init__(self, delay: float) -> None:
        super().__init__(lambda request: "ok: " + request.messages[-1].content)
        self.delay = delay

    async def stream(self, request):  # type: ignore[no-untyped-def]
        if self.delay:
            await asyncio.sleep(self.delay)
        for event in reply_events(self.next_reply(request)):
            yield event


def conversations() -> list[Context]:
    return [
        Context([UserMessage(f"conversation {c}, turn {t}") for t in range(TURNS_EACH)])
        for c in range(CONVERSATIONS)
    ]


def best_of(runs: int, action) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def replay_rows() -> list[list[str]]:
    """Seconds to replay 20 five-turn conversations: a loop of `session.replay`, then
    `replay_all` at 4 and 8 at a time; on a backend that answers at once, and on one
    that takes 20 ms per reply."""
    rows = []
    for delay in (0.0, LATENCY_S):
        backend = SlowScripted(delay)
        sessions = [Session(backend, ctx=c) for c in conversations()]

        def one_by_one(sessions: list[Session] = sessions) -> None:
            for session in sessions:
                assert len(session.replay().ctx.turns) == TURNS_EACH

        def together(n: int, sessions: list[Session] = sessions) -> None:
            done = replay_all(sessions, concurrency=n, progress=False)
            assert [len(r.ctx.turns) for r in done] == [TURNS_EACH] * CONVERSATIONS

        sequential = best_of(3, one_by_one)
        four = best_of(3, lambda: together(4))
        eight = best_of(3, lambda: together(8))
        label = "answers at once" if not delay else f"{delay * 1000:.0f} ms per reply"
        rows.append(
            [
                label,
                f"{sequential * 1e3:.0f} ms",
                f"{four * 1e3:.0f} ms ({sequential / four:.1f}x)",
                f"{eight * 1e3:.0f} ms ({sequential / eight:.1f}x)",
            ]
        )
    return rows


REPLAY_HEADERS = ["scripted backend", "one after another", "replay_all, 4 at once", "8 at once"]


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
    print()
    print(markdown_table(REPLAY_HEADERS, replay_rows()))
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
