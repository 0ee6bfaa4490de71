"""Replay: the user's turns of a conversation sent again, on another backend, model, tool
set or protocol, as a new branch to compare with the old.

Each turn's first item (the user's message or instruction) goes to the new session as it
was; the model's outputs, tool results and anything inserted by hand do not: the new
model answers for itself. When the replay has tools, its calls are run until it answers
(as `query` does), by the tools, or, with `results="recorded"`, from the results the old
conversation recorded for the same call (same tool, same arguments), running the tool
only for a call it never made. `replay_all` does many conversations at once, a bounded
number at a time, with a progress bar when there are many.

One replay (`replay_session`, `RecordedResults`) lives in `parlay.replay_branch`, below
the session whose `replay()` runs it; re-exported here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from parlay._sync import run_sync
from parlay.context import Context
from parlay.replay_branch import RecordedResults, ResultSource, recorded_results, replay_session
from parlay.session import Session

if TYPE_CHECKING:
    from parlay.backends.base import Backend

# From this many conversations on, `replay_all` shows a progress bar unless told not to.
PROGRESS_FROM = 10


def _sessions(
    sources: Sequence[Session | Context], backend: Backend | None, tools: Any
) -> list[Session]:
    made = []
    for source in sources:
        if isinstance(source, Session):
            made.append(source)
        elif backend is None:
            raise ValueError("replaying a Context needs backend=: it has no session of its own")
        else:  # the old conversation as a session of its own, the replay a branch of it
            made.append(Session(backend, ctx=source, tools=tools))
    return made


async def areplay_all(
    sources: Sequence[Session | Context],
    backend: Backend | None = None,
    *,
    concurrency: int = 4,
    progress: bool | None = None,
    return_exceptions: bool = False,
    **kwargs: Any,
) -> list[Any]:
    """Replay every conversation of `sources` (sessions, or contexts read back from files
    or the log), `concurrency` at a time, turns of one conversation in order. The replays
    in the order of `sources`; a failure stops the others and is raised, unless
    `return_exceptions=True` puts it in its place. `progress`: a bar (rich) on standard
    error; None shows one from `PROGRESS_FROM` conversations on. `kwargs` as `replay`."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    sessions = _sessions(sources, backend, kwargs.get("tools"))
    gate = asyncio.Semaphore(concurrency)
    show = len(sessions) >= PROGRESS_FROM if progress is None else progress
    bar = _Progress(len(sessions)) if show else None

    async def one(session: Session) -> Session:
        async with gate:
            try:
                return await session.areplay(backend, **kwargs)
            finally:
                if bar is not None:
                    bar.advance()

    tasks = [asyncio.ensure_future(one(s)) for s in sessions]
    try:
        return list(await asyncio.gather(*tasks, return_exceptions=return_exceptions))
    finally:
        for task in tasks:
            task.cancel()
        if bar is not None:
            bar.stop()


def replay_all(
    sources: Sequence[Session | Context], backend: Backend | None = None, **kwargs: Any
) -> list[Any]:
    """`areplay_all` from synchronous code (a notebook cell)."""
    return run_sync(areplay_all(sources, backend, **kwargs))


class _Progress:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(console=Console(stderr=True), transient=False)
        self._task = self._bar.add_task("replaying", total=total)
        self._bar.start()

    def advance(self) -> None:
        self._bar.advance(self._task)

    def stop(self) -> None:
        self._bar.stop()


__all__ = [
    "PROGRESS_FROM",
    "RecordedResults",
    "ResultSource",
    "areplay_all",
    "recorded_results",
    "replay_all",
    "replay_session",
]
