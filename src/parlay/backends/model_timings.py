"""Debug lines on a model server's work on a reply: its first token, and its own account.

llama.cpp ends a reply with `timings`: how many prompt tokens it read, how many it took
from its prompt cache, and how long reading and writing took. The line shows whether a
conversation's later turns reuse the cache (what parlay renders is byte-stable from
turn to turn for that reason), which no client-side timing can tell apart from the time
the engine spends checking a reply before it goes out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from parlay.errors import SHAPE_ERRORS

logger = logging.getLogger("parlay.model")


def describe_timings(timings: Mapping[str, Any]) -> str | None:
    """One line from llama.cpp's `timings`, or None when they are not llama.cpp's."""
    try:
        read = int(timings["prompt_n"])
        cached = int(timings.get("cache_n", 0))
        read_s = float(timings["prompt_ms"]) / 1000
        written = int(timings["predicted_n"])
        written_s = float(timings["predicted_ms"]) / 1000
    except SHAPE_ERRORS:  # not llama.cpp's, or not of their shape
        return None
    return (
        f"prompt: {read + cached} tokens, {cached} from the model server's cache,"
        f" {read} read in {read_s:.2f} s; reply: {written} tokens in {written_s:.2f} s"
    )


def log_timings(timings: Mapping[str, Any] | None, server: str) -> None:
    if timings is None or not logger.isEnabledFor(logging.DEBUG):
        return
    if line := describe_timings(timings):
        logger.debug("%s (%s)", line, server)


class FirstTokenClock:
    """Seconds from a request to its reply's first event: the model server's time to read
    the prompt, told even for a reply the engine stops early (no `timings` then)."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self.first: float | None = None

    def saw_event(self) -> None:
        if self.first is None:
            self.first = time.monotonic() - self._started

    def log(self, server: str) -> None:
        if self.first is not None:
            logger.debug("first token after %.2f s (%s)", self.first, server)
