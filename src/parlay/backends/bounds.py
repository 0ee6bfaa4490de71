"""Bounded generation: a default token budget and a guard against a reply in a loop.

Small models often loop after a tool result until the context is full. The
`RepetitionGuard` reads text in units (a line, or a sentence) and stops a reply whose
last units are one short cycle repeated, or whose current line is one short piece
repeated (a loop inside a JSON argument). It is linear in the reply.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator

from attrs import evolve, frozen

from parlay.diagnostics import Diagnostics
from parlay.errors import ConfigurationError
from parlay.events import Event, Finish, ScoredTextDelta, TextDelta, TokenChoice, ToolCallStart
from parlay.request import ChatRequest

# Token budgets when the caller sets none: an engine attempt may hold a file in an argument.
EMBEDDED_MAX_TOKENS = 1024
ATTEMPT_MAX_TOKENS = 2048

_UNIT_END = re.compile(r"\n|[.!?](?=\s)")
_SPACES = re.compile(r"\s+")
# A unit longer than this is cut for comparison: a loop of huge lines still matches.
_UNIT_CHARS = 400


@frozen
class RepetitionLimit:
    """When the guard stops a reply: the last `repeats` periods of 1 to `max_period`
    units are identical, and one period holds at least `min_chars` characters (so a
    list of short identical items never trips it)."""

    repeats: int = 4
    max_period: int = 4
    min_chars: int = 12
    # Within one line: the last `line_chars` characters are one piece of at most
    # `line_period` characters repeated (None: lines are not read this way).
    line_chars: int | None = 300
    line_period: int = 50

    def __attrs_post_init__(self) -> None:
        if self.repeats < 2 or self.max_period < 1 or self.min_chars < 1:
            raise ConfigurationError(
                "RepetitionLimit needs repeats >= 2, max_period >= 1 and min_chars >= 1, got "
                f"{self.repeats}, {self.max_period}, {self.min_chars}"
            )
        period, chars = self.line_period, self.line_chars
        if chars is not None and not (period >= 1 and chars >= max(2 * period, 32)):
            raise ConfigurationError(
                "RepetitionLimit needs line_period >= 1 and line_chars >= 32 and >= 2 * "
                f"line_period, got line_period={period}, line_chars={chars}"
            )


class LineLoop:
    """Finds where a line has become one short piece repeated for `chars` characters,
    looking at fixed positions every `_STEP` characters (so chunking does not change where
    it stops) for the last `_STEP` characters among the `period` before."""

    _STEP = 16

    def __init__(self, chars: int, period: int) -> None:
        self.chars = chars
        self.period = period
        self._recent = ""  # the last `chars` characters read
        self._read = 0  # characters read so far

    def feed(self, text: str) -> tuple[int, str] | None:
        """Read `text`; if the loop is seen in it: (where it is seen in `text`, the piece)."""
        buf = self._recent + text
        before = self._read - len(self._recent)  # the reply's position of buf[0]
        step = self._STEP
        first = self._read + (-self._read - 1) % step  # the first look: a position ≡ -1
        for look in range(first, self._read + len(text), step):
            end = look + 1 - before
            if (piece := self._piece(buf[max(0, end - self.chars) : end])) is not None:
                return end - len(self._recent), piece
        self._read += len(text)
        self._recent = buf[-self.chars :]
        return None

    def _piece(self, window: str) -> str | None:
        """The shortest piece `window` repeats, when it is one line of `chars` characters."""
        if len(window) < self.chars or "\n" in window:
            return None
        tail = window[-self._STEP :]
        near = window[-self._STEP - self.period : -1]
        at = near.rfind(tail)  # the nearest first: the shortest period
        while at != -1:
            period = self.period - at
            if window[period:] == window[:-period]:
                return window[-period:]
            at = near.rfind(tail, 0, at + self._STEP - 1)
        return None


class RepetitionGuard:
    """Reads a reply's text as it streams, and holds back what only repeats it.

    Repeated text is held until it says something new, and dropped when it completes a
    loop (`tripped` then says what repeated): a looping reply reads as if it had said
    its sentence once. However the text is chunked, the same text is shown.
    """

    def __init__(self, limit: RepetitionLimit | None = None) -> None:
        self.limit = limit = limit or RepetitionLimit()
        # The last units, whitespace folded, to compare.
        self._units: deque[str] = deque(maxlen=limit.repeats * limit.max_period)
        self._unit = ""  # the raw text of the unit being read, all of it decided
        self._unit_shown = False  # part of it said something new and was shown
        self._held: list[str] = []
        chars = limit.line_chars
        self._line = LineLoop(chars, limit.line_period) if chars is not None else None
        self.tripped: str | None = None
        self.times = 0  # how many times `tripped` was repeated when the guard stopped

    def feed(self, text: str) -> str:
        """Take more of the reply; return what may be shown now."""
        if self.tripped is not None:
            return ""
        if self._line is None or (line_loop := self._line.feed(text)) is None:
            return self._feed_units(text)
        seen_at, piece = line_loop
        shown = self._feed_units(text[:seen_at])
        if self.tripped is None:
            self.tripped, self.times = piece, self._line.chars // len(piece)
            self._held = []
        return shown

    def _feed_units(self, text: str) -> str:
        shown: list[str] = []
        buf = self._unit + text
        decided = len(self._unit)
        unit_start = 0
        for match in _UNIT_END.finditer(buf, max(0, decided - 1)):
            end = match.end()
            self._decide(shown, buf[unit_start:end], buf[max(decided, unit_start) : end])
            decided = end
            if self._end_unit(shown, buf[unit_start:end]):
                return "".join(shown)
            unit_start = end
        self._decide(shown, buf[unit_start:], buf[max(decided, unit_start) :])
        self._unit = buf[unit_start:]
        if len(self._unit) > 4 * _UNIT_CHARS:
            # No unit end for a long while: keep only the tail, enough to compare.
            self._unit = self._unit[-_UNIT_CHARS:]
        return "".join(shown)

    def flush(self) -> str:
        """The text still held, once the reply has ended (nothing after a loop)."""
        held, self._held = "".join(self._held), []
        return "" if self.tripped is not None else held

    def _decide(self, shown: list[str], unit_so_far: str, new: str) -> None:
        """Show or hold `new`, the latest text of the unit that reads `unit_so_far`."""
        if not new:
            return
        if not self._unit_shown:
            folded = _SPACES.sub(" ", unit_so_far).lstrip()
            if not folded or any(folded in u for u in self._recent()):
                self._held.append(new)
                return
            self._unit_shown = True
        self._release(shown)
        shown.append(new)

    def _end_unit(self, shown: list[str], raw: str) -> bool:
        """A unit ended; True once the reply is in a loop."""
        self._unit_shown = False
        unit = _SPACES.sub(" ", raw).strip()[:_UNIT_CHARS]
        if not unit:
            return False
        repeated = any(unit in u for u in self._recent())
        self._units.append(unit)
        self.tripped = self._loop()
        if self.tripped is not None:
            self.times = self.limit.repeats
            self._held = []
            return True
        if not repeated:
            self._release(shown)
        return False

    def _recent(self) -> list[str]:
        return list(self._units)[-self.limit.max_period :]

    def _release(self, shown: list[str]) -> None:
        shown.extend(self._held)
        self._held = []

    def _loop(self) -> str | None:
        units, limit = list(self._units), self.limit
        for period in range(1, limit.max_period + 1):
            if len(units) < period * limit.repeats:
                break
            cycle = units[-period:]
            # A cycle that is a shorter one repeated (equal to a rotation of itself by a
            # divisor of its length) was judged as that one, its length included.
            if sum(map(len, cycle)) < limit.min_chars or any(
                period % d == 0 and cycle[d:] + cycle[:d] == cycle for d in range(1, period)
            ):
                continue
            if units[-period * limit.repeats :] == cycle * limit.repeats:
                return " ".join(cycle)
        return None


def with_max_tokens(request: ChatRequest, default: int | None) -> ChatRequest:
    """`request` with `default` as its token budget when the caller set none."""
    if default is None or request.options.max_tokens is not None:
        return request
    return request.replace(options=evolve(request.options, max_tokens=default))


async def guarded(
    events: AsyncIterator[Event], limit: RepetitionLimit | None
) -> AsyncIterator[Event]:
    """`events`, ended early when the text falls into a loop (`limit` None: unguarded).

    The inner stream is then closed at once, so the model stops generating, and the
    reply ends with `Finish("length")` saying what repeated. Token scores go out with
    the text, in order.
    """
    if limit is None:
        async for event in events:
            yield event
        return
    guard, tokens = RepetitionGuard(limit), list[TokenChoice]()
    try:
        async for event in events:
            for out in _passed(event, guard, tokens):
                yield out
            if guard.tripped is not None:
                break
    finally:
        if (close := getattr(events, "aclose", None)) is not None:
            await close()
    if (repeated := guard.tripped) is None:
        return
    shown = repeated if len(repeated) <= 80 else repeated[:77] + "..."
    note = f"stopped a reply in a loop: it repeated {shown!r} {guard.times} times"
    yield Finish("length", diagnostics=Diagnostics(notes=(note,), repetition=repeated))


def _passed(event: Event, guard: RepetitionGuard, tokens: list[TokenChoice]) -> list[Event]:
    """What of `event` goes out now; text the guard holds waits, with its token scores."""
    if not isinstance(event, TextDelta):
        rest = guard.flush() if isinstance(event, Finish) else ""
        return [_delta(rest, tokens), event] if rest else [event]
    if isinstance(event, ScoredTextDelta):
        tokens.extend(event.tokens)
    shown = guard.feed(event.text)
    whole = shown == event.text and not tokens[len(getattr(event, "tokens", ())) :]
    if guard.tripped is None and whole:
        tokens.clear()
        return [event]
    return [_delta(shown, tokens)] if shown else []


def _delta(text: str, tokens: list[TokenChoice]) -> TextDelta:
    """`text` with the scores of the tokens read since the last delta (then forgotten)."""
    if not tokens:
        return TextDelta(text)
    delta = ScoredTextDelta(text, tokens=tuple(tokens))
    tokens.clear()
    return delta


async def loops_end_the_turn(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """`events` as a client should read them: a reply the loop guard stopped (with no call
    in it) ends as a finished turn, not as the client's token limit reached.

    Said as "length", Claude Code takes it for its own 64,000-token limit, asks the model
    to go on (which loops again) and fails the task ("exceeded the 64000 output token
    maximum"). The loop is over by parlay's judgement; the diagnostics still name it. A
    reply with a call keeps "length", so no client takes a cut call for a whole one.
    """
    called = False
    async for event in events:
        called = called or isinstance(event, ToolCallStart)
        if isinstance(event, Finish) and not called and _stopped_in_a_loop(event):
            event = evolve(event, reason="stop")
        yield event


def _stopped_in_a_loop(finish: Finish) -> bool:
    looped = finish.diagnostics is not None and finish.diagnostics.repetition is not None
    return finish.reason == "length" and looped
