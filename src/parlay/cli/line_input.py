"""`parlay chat`'s input: line editing and history (readline) when stdin is a terminal.

The history file sits beside the log (`chat-history`), so Up recalls lines of earlier
chats too. Piped input is read as it is, with no editing and no history.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from rich.console import Console

HISTORY_LINES = 1000


def history_path() -> Path:
    from parlay.store.store import default_path

    return default_path().with_name("chat-history")


@contextmanager
def chat_lines(stderr: Console) -> Iterator[Callable[[], str | None]]:
    """A reader of the next line (None at the end of input), kept in history if a terminal."""
    if not sys.stdin.isatty():

        def piped() -> str | None:
            stderr.print("[bold]>[/] ", end="")
            line = sys.stdin.readline()
            return line.rstrip("\n") if line else None

        yield piped
        return
    import readline

    path = history_path()
    with suppress(OSError):  # no history yet
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LINES)

    def typed() -> str | None:
        try:
            return input("> ")
        except EOFError:
            return None

    try:
        yield typed
    finally:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written beside it, then moved in: another chat starting meanwhile reads
            # the old history or the new one, never a half-written file.
            partial = path.with_name(path.name + ".partial")
            readline.write_history_file(partial)
            partial.replace(path)
        except OSError as exc:
            stderr.print(f"[dim]chat history not saved: {exc}[/]")
