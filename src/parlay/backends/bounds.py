"""Bounded generation: a default token budget and a guard against a reply in a loop.

Small models, asked to go on after a tool result, often fall into a loop ("The answer is
5555." 180 times, until the context is full). A token budget bounds the cost of any
reply; the `RepetitionGuard` stops a loop early, as soon as the reply's last lines or
sentences are one short cycle repeated, and says what repeated.

The guard reads text in *units*: a line, or a sentence ending in `.`, `!` or `?` before
white space. It trips when the last `repeats` periods of 1 to `max_period` units are
the same, and those units hold at least `min_chars` characters in all, so a list of
short identical items (`- [ ] todo`, `}`) never trips it. Each completed unit costs a
bounded number of comparisons, so the guard is linear in the reply.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator

from attrs import evolve, frozen

from parlay.diagnostics import Diagnostics
from parlay.errors import ConfigurationError
from parlay.events import Event, Finish, TextDelta
from parlay.request import ChatRequest

# Most tokens of one reply of the embedded model, and of one attempt of the prompted
# engine, when the caller sets none. A 135M model that has not ended in 1024 tokens is
# in a loop; an engine attempt may hold a whole file in an argument, so it gets more.
EMBEDDED_MAX_TOKENS = 1024
ATTEMPT_MAX_TOKENS = 2048

_UNIT_END = re.compile(r"\n|[.!?](?=\s)")
_SPACES = re.compile(r"\s+")
# A unit longer than this is cut for comparison: a loop of huge lines still matches.
_UNIT_CHARS = 400


@frozen
class RepetitionLimit:
    """When the guard stops a reply: the last `repeats` periods of 1 to `max_period`
    units are identical and hold at least `min_chars` characters in all."""

    repeats: int = 4
    max_period: int = 4
    min_chars: int = 12

    def __attrs_post_init__(self) -> None:
        if self.repeats < 2 or self.max_period < 1 or self.min_chars < 1:
            raise ConfigurationError(
                "RepetitionLimit needs repeats >= 2, max_period >= 1 and min_chars >= 1, got "
                f"{self.repeats}, {self.max_period}, {self.min_chars}"
            )


class RepetitionGuard:
    """Reads a reply's text as it streams; `feed` returns what repeated once it loops."""

    def __init__(self, limit: RepetitionLimit | None = None) -> None:
        self.limit = limit or RepetitionLimit()
        self._partial: list[str] = []
        window = self.limit.repeats * self.limit.max_period
        self._units: deque[str] = deque(maxlen=window)
        self.tripped: str | None = None

    def feed(self, text: str) -> str | None:
        """Take more of the reply; the repeated text once the reply is in a loop, else None."""
        if self.tripped is not None:
            return self.tripped
        start = 0
        for match in _UNIT_END.finditer(text):
            self._partial.append(text[start : match.end()])
            start = match.end()
            found = self._close_unit()
            if found is not None:
                self.tripped = found
                return found
        if start < len(text):
            self._partial.append(text[start:])
            if sum(len(p) for p in self._partial) > 4 * _UNIT_CHARS:
                # No unit end for a long while: keep only the tail, enough to compare.
                self._partial = ["".join(self._partial)[-_UNIT_CHARS:]]
        return None

    def _close_unit(self) -> str | None:
        unit = _SPACES.sub(" ", "".join(self._partial)).strip()[:_UNIT_CHARS]
        self._partial = []
        if not unit:
            return None
        self._units.append(unit)
        return self._loop()

    def _loop(self) -> str | None:
        units = list(self._units)
        limit = self.limit
        for period in range(1, limit.max_period + 1):
            span = period * limit.repeats
            if len(units) < span:
                break
            cycle = units[-period:]
            if sum(len(u) for u in cycle) * limit.repeats < limit.min_chars:
                continue
            if all(units[-span + i] == cycle[i % period] for i in range(span)):
                return " ".join(cycle)
        return None


def describe(repeated: str, limit: RepetitionLimit) -> str:
    shown = repeated if len(repeated) <= 80 else repeated[:77] + "..."
    return f"stopped a reply in a loop: it repeated {shown!r} {limit.repeats} times"


def with_max_tokens(request: ChatRequest, default: int | None) -> ChatRequest:
    """`request` with `default` as its token budget when the caller set none."""
    if default is None or request.options.max_tokens is not None:
        return request
    return request.replace(options=evolve(request.options, max_tokens=default))


async def guarded(
    events: AsyncIterator[Event], limit: RepetitionLimit | None
) -> AsyncIterator[Event]:
    """`events`, ended early when the text falls into a loop (`limit` None: unguarded).

    The inner stream is closed at once, so the model stops generating (an HTTP backend
    drops the request), and the reply ends with `Finish("length")` whose diagnostics
    say what repeated (`Diagnostics.repetition`).
    """
    if limit is None:
        async for event in events:
            yield event
        return
    guard = RepetitionGuard(limit)
    try:
        async for event in events:
            yield event
            if isinstance(event, TextDelta) and guard.feed(event.text) is not None:
                break
        else:
            return
    finally:
        await _close(events)
    assert guard.tripped is not None
    note = describe(guard.tripped, limit)
    yield Finish("length", diagnostics=Diagnostics(notes=(note,), repetition=guard.tripped))


async def _close(events: AsyncIterator[Event]) -> None:
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()
