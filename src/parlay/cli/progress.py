"""A status line on stderr while the command line waits on the model.

Loading the embedded model and waiting for a reply's first token can take most of a
minute on a small machine, and silence looks like a hang. On a terminal a spinner says
which of the two is happening and for how long; it is erased as soon as text arrives.
Piped, redirected or with `--json`, nothing is shown: the output stays for programs.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

# How deep to look through wrapping backends (the engine, greedy sampling) for the model.
_WRAPPERS_DEEP = 6


def _unloaded_model(backend: Any) -> str | None:
    """The name of the embedded model behind `backend` while it is not loaded yet."""
    from parlay.backends.local import LocalBackend

    for _ in range(_WRAPPERS_DEEP):
        if isinstance(backend, LocalBackend):
            # Its llama.cpp server is made, and the model read, on first use.
            loaded = backend._backend is not None
            return None if loaded else backend.name.removeprefix("local:")
        backend = getattr(backend, "inner", None)
    return None


class _WaitText:
    """Rendered afresh at each refresh: what is being waited for, and for how long."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        waited = int(time.monotonic() - self.since)
        model = _unloaded_model(self.backend)
        doing = f"loading {model}" if model else "waiting for the model's reply"
        return Text(f"{doing}… {waited} s", style="dim")


class WaitStatus:
    """`start()` before a wait on the model, `stop()` when something arrives, `print()`
    for any other line on its console while a turn runs.

    Tools run on another thread than the one that reads the reply, and their lines
    (`--tools-debug`) came while the spinner started or stopped: rich then wrote them
    into the spinner's line ("… 14 stool result add: 579"). One lock orders the three,
    and a line is printed with the spinner cleared, which then comes back.
    """

    def __init__(self, console: Console, backend: Any = None, *, enabled: bool) -> None:
        self.console = console
        self.backend = backend  # whose model the status names while it loads
        # Only where a person watches: rich knows whether stderr is a terminal.
        self.enabled = enabled and console.is_terminal
        self._status: Status | None = None
        self._lock = threading.RLock()

    def start(self) -> None:
        with self._lock:
            if not self.enabled or self._status is not None:
                return
            self._status = Status(_WaitText(self.backend), console=self.console, spinner="dots")
            self._status.start()

    def stop(self) -> None:
        with self._lock:
            if self._status is not None:
                self._status.stop()
                self._status = None

    def print(self, *objects: Any, **options: Any) -> None:
        """`Console.print` on a line of its own, never into the spinner's."""
        with self._lock:
            waiting = self._status
            if waiting is not None:
                waiting.stop()
            self.console.print(*objects, **options)
            if waiting is not None:
                waiting.start()  # the same wait: its seconds go on counting
