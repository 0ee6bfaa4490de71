"""A second look at how many calls a reply makes (the opt-in rule `recount_calls`).

In the json format Qwen2.5-Coder-0.5B writes one call where the user asked for several,
whatever the wording or the examples say (bench/results/parallel-probe.md): choosing the
plural `{"actions": [...]}` is choosing a first key, and it never does. In the typed
format the reply's kind is a value written first (`{"type": "tool_calls", ...}`), and
there it chooses several calls where several are asked; but that format also calls
where no tool fits more often. So the json reply decides whether to call, and when it
makes exactly one call with parallel calls allowed, the request goes once more through
the typed format with a call required: its calls replace the one when it wrote two or
more, and the json call stands otherwise. The cost is one more generation for every
single call, which is why this is an option.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from parlay.engine.attempt import CALL_EVENTS, Attempt
from parlay.engine.settings import EngineSettings
from parlay.engine.turn import Turn
from parlay.events import Event, Finish
from parlay.reply import gather
from parlay.request import REQUIRED, ChatRequest


class Rerun(Protocol):
    """The engine with some settings changed, streaming a request (`configure().stream`)."""

    def __call__(self, request: ChatRequest, **changes: Any) -> AsyncIterator[Event]: ...


async def calls_to_hand_on(
    settings: EngineSettings, turn: Turn, released: Attempt, rerun: Rerun
) -> list[Event]:
    """The events that hand the reply on: the released attempt's, or the recount's calls."""
    worth = worth_recounting(settings, turn, released)
    several = await recounted(turn, rerun) if worth else None
    if several is None:
        turn.emitted_calls = released.emitted_calls
        return released.release()
    turn.emitted_calls = len(gather(several).calls)
    return several


def worth_recounting(settings: EngineSettings, turn: Turn, released: Attempt) -> bool:
    """One call, written by the json format under `auto` with parallel calls allowed,
    and nothing of the reply shown yet."""
    return (
        settings.rules.on("recount_calls")
        and settings.options.action_format == "json"
        and turn.policy.model_decides
        and turn.policy.parallel
        and released.emitted_calls == 1
        and released.live_calls == 0
        and not released.shown_text
        and not turn.shown_text
    )


async def recounted(turn: Turn, rerun: Rerun) -> list[Event] | None:
    """The call events of the typed format's reply when it made two calls or more, else
    None (the json reply's call stands). Its usage and what it found are the turn's."""
    events: list[Event] = []
    required = turn.request.replace(tool_choice=REQUIRED)
    async for out in rerun(required, action_format="typed", rules_off=["recount_calls"]):
        if isinstance(out, Finish):
            turn.add_usage(out)
            continue
        if isinstance(out, CALL_EVENTS):
            events.append(out)
    calls = gather(events).calls
    if len(calls) < 2:
        turn.notes.append(f"recount: the typed format wrote {len(calls)} call(s); one stands")
        return None
    turn.fired.append("recount_calls")
    names = ", ".join(call.name for call in calls)
    turn.notes.append(f"recount: the typed format wrote {len(calls)} calls ({names})")
    return events
