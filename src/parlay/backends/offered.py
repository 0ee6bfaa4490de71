"""Calls only to offered tools: what every backend and the session hand on.

A client that offered `Bash` and `Read` must never receive a call to `add`: it cannot
run it, and an agent told "no such tool" loses its turn (Claude Code did, behind a model
that kept asking for a tool of its examples). Nor a call its `tool_choice` ruled out:
none under "none", only the named tool when it names one (Ollama, for one, ignores
`tool_choice`). The prompt-contract engine asks the model again first (`unknown_tool`);
a native server may return any name it likes. Whatever the source, such a call is
dropped here, and a reply left with no call becomes a plain answer that names the tool
the model wanted (`Diagnostics.unoffered_tools` lists it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection

from attrs import evolve

from parlay.context import AssistantMessage, ToolResult
from parlay.diagnostics import Diagnostics
from parlay.events import Event, Finish, TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from parlay.request import ChatRequest


def offered_names(request: ChatRequest) -> frozenset[str]:
    """The tools a request offers: its own or, where a later turn repeats no tool list,
    those its history called (the client offered them before)."""
    if request.tools:
        return frozenset(spec.name for spec in request.tools)
    names: set[str] = set()
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            names.update(call.name for call in message.tool_calls)
        elif isinstance(message, ToolResult):
            names.add(message.name)
    return frozenset(names)


def allowed_names(request: ChatRequest, offered: Collection[str] | None = None) -> frozenset[str]:
    """The tools a reply to `request` may call: those offered (the request's, or
    `offered`), less what its tool_choice rules out (every one under "none"; all but the
    named one when it names one)."""
    choice = request.tool_choice
    offered = offered_names(request) if offered is None else frozenset(offered)
    if choice.mode == "none":
        return frozenset()
    return offered & {choice.name} if choice.mode == "tool" else offered


def unoffered_answer(names: Collection[str], ruled_out: bool = False) -> str:
    """The plain answer of a reply whose only calls went to tools that were not offered
    or that the request's tool_choice `ruled_out`."""
    why = "tool_choice rules out" if ruled_out else "is not available"
    return f"No call was made: the model asked for a tool that {why} ({', '.join(names)})."


class OfferedGate:
    """Passes a stream's events, less the calls to tools not in `offered` (those `listed`
    but not in `offered`: ruled out by the request's tool_choice)."""

    def __init__(self, offered: Collection[str], listed: Collection[str] = ()) -> None:
        self.offered = frozenset(offered)
        self.ruled_out = frozenset(listed) - self.offered
        self.blocked: set[str] = set()  # ids of the calls dropped
        self.wanted: dict[str, None] = {}  # their names, in order, once each
        self.started = 0  # calls begun and handed on (their index, renumbered)
        self.passed = 0  # calls ended and handed on
        self.text = False

    def feed(self, event: Event) -> list[Event]:
        if isinstance(event, ToolCallStart):
            if event.name not in self.offered:
                self.blocked.add(event.id)
                return []
            self.started += 1
            return [evolve(event, index=self.started - 1)]
        if isinstance(event, ToolCallArgsDelta):
            return [] if event.id in self.blocked else [event]
        if isinstance(event, ToolCallEnd):
            if event.id in self.blocked or event.call.name not in self.offered:
                self.wanted.setdefault(event.call.name)
                return []
            self.passed += 1
            return [event]
        if isinstance(event, TextDelta):
            self.text = self.text or bool(event.text)
            return [event]
        if isinstance(event, Finish) and self.wanted:
            return self._finish(event)
        return [event]

    def _finish(self, finish: Finish) -> list[Event]:
        names = tuple(self.wanted)
        ruled_out = all(name in self.ruled_out for name in names)
        why = "tool_choice rules out" if ruled_out else "was not offered"
        note = f"dropped a call to a tool that {why}: {', '.join(names)}"
        diagnostics = finish.diagnostics or Diagnostics()
        diagnostics = evolve(
            diagnostics,
            unoffered_tools=(*diagnostics.unoffered_tools, *names),
            notes=(*diagnostics.notes, note),
        )
        if self.passed:
            return [evolve(finish, diagnostics=diagnostics)]
        reason = "stop" if finish.reason == "tool_calls" else finish.reason
        answer = unoffered_answer(names, ruled_out)
        return [
            TextDelta(f"\n\n{answer}" if self.text else answer),
            evolve(finish, reason=reason, diagnostics=diagnostics),
        ]


async def offered_calls_only(
    events: AsyncIterator[Event], offered: Collection[str], listed: Collection[str] = ()
) -> AsyncIterator[Event]:
    """`events` without the calls to tools not in `offered` (see `OfferedGate`)."""
    gate = OfferedGate(offered, listed)
    try:
        async for event in events:
            for out in gate.feed(event):
                yield out
    finally:
        # Closed with the caller (a client that hung up): the upstream request ends now,
        # not when the collector gets to it.
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def allowed_calls_only(events: AsyncIterator[Event], request: ChatRequest) -> AsyncIterator[Event]:
    """`events` of a reply to `request` without the calls it does not allow: to a tool not
    offered, or one its tool_choice rules out (`allowed_names`)."""
    offered = offered_names(request)
    return offered_calls_only(events, allowed_names(request, offered), offered)
