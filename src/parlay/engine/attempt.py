"""One round trip of the prompted engine to the inner model: what is shown, held, dropped.

The reply is parsed as it streams, and each attempt routes its events in one mode
(`TurnPolicy.streaming`): `live` shows every event at once; `buffered` holds the whole
reply; `hybrid` shows text once it is clearly not a refusal and holds the calls until
the reply has been judged.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.engine.checks.checked_calls import CheckedCall
from parlay.engine.checks.echo_trim import EchoTrim
from parlay.engine.checks.own_words import OwnWords
from parlay.engine.checks.placeholders import leading_debris, may_become_placeholder
from parlay.engine.checks.refusal import RefusalPhrases, detect_refusal
from parlay.engine.checks.retry import CallIssue
from parlay.engine.contract.parser import ActionStreamParser, ParseResult
from parlay.engine.policy import StreamingMode
from parlay.events import (
    Event,
    Finish,
    ReasoningDelta,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from parlay.reasoning import ThinkSplitter

CALL_EVENTS = (ToolCallStart, ToolCallArgsDelta, ToolCallEnd)


@frozen
class AttemptSetup:
    """How one attempt treats its reply, as its place in the turn decides."""

    mode: StreamingMode
    check: Callable[[ToolCall], CheckedCall]
    may_call: bool
    refusal_phrases: RefusalPhrases
    refusal_window: int  # characters of text held for the refusal check (0: none)
    suppress_text: bool = False  # earlier text went out: this reply's text is dropped
    parallel: bool = True
    drop_duplicates: bool = False
    # parlay's own words around the tool results: text that may only repeat them is
    # held, so the echo filter can still drop it...
    own_words: OwnWords = field(factory=OwnWords)
    # ... and clauses repeating them are taken out of a reply that says more (not out of
    # an answer held to the user's schema: its text is a JSON document).
    trim_clauses: bool = True


class Attempt:
    """The events of one reply, routed by the attempt's mode, and what was found in it."""

    def __init__(self, setup: AttemptSetup, tools: Collection[str], thought_limit: int) -> None:
        self.setup = setup
        self.parser = ActionStreamParser(tools, thought_limit=thought_limit)
        self.think = ThinkSplitter()
        self.trim = EchoTrim(setup.own_words if setup.trim_clauses else OwnWords())
        self.ended: set[tuple[str, str]] = set()  # (name, arguments) of the calls so far
        self.duplicates = 0
        self.kept_call: str | None = None
        self.held: list[Event] = []
        self.shown_text = False  # text streams (live: once it is no stand-in; hybrid: no refusal)
        self.calls_started = False
        self.live_calls = 0
        self.raw: list[str] = []
        self.tokens: list[TokenChoice] = []  # with alternatives, when the backend gave them
        self.issues: list[CallIssue] = []
        self.notes: list[str] = []
        self.finish: Finish | None = None
        self.parsed = ParseResult("", ())  # the whole reply, parsed once it has ended

    def take(self, event: Event) -> list[Event]:
        """One event of the inner model's stream; returns the events to show now. A
        leading `<think>` block of its text is reasoning: split off before the parser."""
        if not isinstance(event, TextDelta):
            return self._take(event)
        return [out for part in self.think.feed(event) for out in self._take(part)]

    def _take(self, event: Event) -> list[Event]:
        if isinstance(event, ReasoningDelta):
            return [event]  # shown as it comes; never parsed, never judged
        if isinstance(event, Finish):
            self.finish = event
            return []
        if not isinstance(event, TextDelta):  # a native call from the inner backend
            return self.route([event])
        self.raw.append(event.text)
        if isinstance(event, ScoredTextDelta):
            self.tokens.extend(event.tokens)
        return self.route(self.parser.feed(event.text))

    def end(self) -> list[Event]:
        """The reply has ended: the last events to show."""
        thought = [out for part in self.think.finish() for out in self._take(part)]
        now = thought + self.route(self.parser.finish())
        self.parsed = self.parser.result()
        rest = self.trim.flush()  # the clause the echo trim holds
        if self.trim.dropped:
            self.notes.append(
                f"took out {len(self.trim.dropped)} clause(s) repeating the continuation's "
                f"instructions: {self.trim.dropped[0][:80]!r}"
            )
        if rest:
            self._route(TextDelta(rest), now)
        return now

    def route(self, events: list[Event]) -> list[Event]:
        """Each event past the echo trim, checked, then shown (returned), held or dropped."""
        now: list[Event] = []
        for event in events:
            if isinstance(event, TextDelta) and self.trim.active:
                if not (text := self.trim.feed(event.text)):
                    continue
                event = TextDelta(text)
            elif self.trim.active and (rest := self.trim.flush()):
                self._route(TextDelta(rest), now)  # text before a call goes out before it
            self._route(event, now)
        return now

    @property
    def cut_by_limit(self) -> bool:
        """Whether the token limit stopped the reply (it may end inside a word)."""
        return self.finish is not None and self.finish.reason == "length"

    def _route(self, event: Event, now: list[Event]) -> None:
        if (admitted := self._admitted(event)) is None:
            return
        mode = self.setup.mode
        text_streams = mode == "live" or (mode == "hybrid" and not self.calls_started)
        if isinstance(admitted, TextDelta) and text_streams:
            now.extend(self._text(admitted))
        elif mode == "live":
            now.extend(self._release_text())  # text before a call goes out before it
            self.live_calls += isinstance(admitted, ToolCallEnd)
            now.append(admitted)
        else:
            self.calls_started = True
            self.held.append(admitted)

    def _admitted(self, event: Event) -> Event | None:
        """`event` with its call checked, or None where the turn's limits drop it."""
        if self._further_call(event):
            return None
        if isinstance(event, ToolCallEnd):
            if self._duplicate(event):
                return None
            checked = self.setup.check(event.call)
            self.issues.extend(checked.issues)
            self.notes.extend(checked.notes)
            event = ToolCallEnd(checked.call)
        if not self.setup.may_call and isinstance(event, CALL_EVENTS):
            if isinstance(event, ToolCallEnd):
                self.notes.append(f"ignored a {event.call.name} call: tool_choice is none")
            return None
        if isinstance(event, TextDelta) and self.setup.suppress_text:
            self.notes.append("dropped the retry's text: earlier text was already shown")
            return None
        return event

    def _further_call(self, event: Event) -> bool:
        """Whether `event` belongs to a second call while parallel calls are off."""
        if self.setup.parallel or not isinstance(event, CALL_EVENTS):
            return False
        if self.kept_call is None and isinstance(event, ToolCallStart):
            self.kept_call = event.id
        if event.id == self.kept_call:
            return False
        if isinstance(event, ToolCallEnd):
            self.notes.append(
                f"dropped a further {event.call.name} call: parallel_tool_calls is off"
            )
        return True

    def _duplicate(self, end: ToolCallEnd) -> bool:
        """A call identical to an earlier one of this reply, dropped where its events are
        still held: the typed format's plural form holds two calls or more, so a model
        with one call to make may write it twice."""
        if not self.setup.drop_duplicates or self.setup.mode == "live":
            return False
        key = (end.call.name, end.call.arguments_json)
        if key not in self.ended:
            self.ended.add(key)
            return False
        self.drop_held({end.id})
        self.duplicates += 1
        self.notes.append(f"dropped a second identical {end.call.name} call")
        return True

    def _text(self, event: TextDelta) -> list[Event]:
        """Text is shown once its start is no longer held back, then as it comes."""
        if self.shown_text:
            return [event]
        self.held.append(event)
        if self._held_back("".join(e.text for e in self.held if isinstance(e, TextDelta))):
            return []
        return self._release_text()

    def _held_back(self, start: str) -> bool:
        """Live: while it may still be only a stand-in of the format instructions ("your
        answer"). Hybrid: until `refusal_window` characters show no refusal. Both: while
        it may only repeat the continuation's words, which the engine drops."""
        setup = self.setup
        if setup.mode == "live":
            held = may_become_placeholder(start)
        else:
            window = setup.refusal_window
            held = len(start) < window or bool(
                window and detect_refusal(start, setup.refusal_phrases)
            )
        return held or setup.own_words.may_be_repeated_by(start)

    def _release_text(self) -> list[Event]:
        if self.shown_text or not self.held:
            return []
        self.shown_text = True
        released, self.held = self.held, []
        return without_leading_debris(released)

    def release(self) -> list[Event]:
        """The held events, each call's argument deltas replaced by its repaired JSON."""
        if not self.shown_text:
            self.held = without_leading_debris(self.held)
        streamed: dict[str, list[str]] = {}
        for event in self.held:
            if isinstance(event, ToolCallArgsDelta):
                streamed.setdefault(event.id, []).append(event.delta)
        final = {e.id: e.call.arguments_json for e in self.held if isinstance(e, ToolCallEnd)}
        rewrite = {i for i, args in final.items() if "".join(streamed.get(i, [])) != args}
        out: list[Event] = []
        for event in self.held:
            if isinstance(event, ToolCallArgsDelta) and event.id in rewrite:
                continue
            if isinstance(event, ToolCallEnd) and event.call.id in rewrite:
                out.append(ToolCallArgsDelta(event.call.id, event.call.arguments_json))
            out.append(event)
        return out

    def drop_held(self, call_ids: Collection[str]) -> int:
        """Drop the held events of these calls; how many ended calls went with them."""
        before = self.emitted_calls
        self.held = [e for e in self.held if not (isinstance(e, CALL_EVENTS) and e.id in call_ids)]
        return before - self.emitted_calls

    @property
    def emitted_calls(self) -> int:
        """Calls this attempt handed on: live ones, or held ones once released."""
        return self.live_calls + sum(1 for e in self.held if isinstance(e, ToolCallEnd))


def without_leading_debris(events: list[Event]) -> list[Event]:
    """The events with an action's leftover syntax taken off the start of their text."""
    cut = leading_debris("".join(e.text for e in events if isinstance(e, TextDelta)))
    out: list[Event] = []
    for event in events:
        if cut and isinstance(event, TextDelta):
            if len(event.text) <= cut:
                cut -= len(event.text)
                continue
            event, cut = TextDelta(event.text[cut:]), 0
        out.append(event)
    return out
