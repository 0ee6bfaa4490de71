"""The results of a ModelOutputThunk: each property forces the thunk, then reads its events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from parlay.diagnostics import Diagnostics
from parlay.errors import ThunkError
from parlay.events import Event, Finish, FinishReason, ReasoningDelta, TextDelta, Usage
from parlay.messages import AssistantMessage, Message, ToolCall
from parlay.reply import gather

T = TypeVar("T")


class ThunkResults(Generic[T]):
    """What a finished turn holds; the thunk (`parlay.thunk`) fills the state it reads."""

    _events: list[Event]
    _round_start: int
    _steps: list[Message]
    _usage: Usage | None
    _parse: Callable[[str], T] | None
    _parsed: Any
    _parsed_ready: bool

    def _force(self) -> None:
        """Block until the turn is done (the thunk runs it); raise its error."""
        raise NotImplementedError

    # -- results (each forces completion) ----------------------------------------------
    def _round(self) -> list[Event]:
        return self._events[self._round_start :]

    def _text(self) -> str:
        return "".join(e.text for e in self._round() if isinstance(e, TextDelta))

    def _calls(self) -> tuple[ToolCall, ...]:
        return gather(self._round()).calls

    def _finish(self) -> Finish | None:
        for event in reversed(self._events):
            if isinstance(event, Finish):
                return event
        return None

    @property
    def value(self) -> str:
        """The text of the final answer (action blocks removed)."""
        self._force()
        return self._text()

    @property
    def reasoning(self) -> str:
        """The model's reasoning in this answer (a `<think>` block, an upstream's
        `reasoning_content`), kept apart from `.value`; "" when it gave none."""
        self._force()
        return "".join(e.text for e in self._round() if isinstance(e, ReasoningDelta))

    @property
    def tools(self) -> tuple[ToolCall, ...]:
        """The calls of the final output, which the verb did not run (the repr says so)."""
        self._force()
        return self._calls()

    @property
    def parsed(self) -> T:
        """The value parsed with the verb's `format` (a pydantic model, say)."""
        self._force()
        if self._parse is None:
            raise ThunkError("this thunk has no format to parse with: pass format= to the verb")
        if not self._parsed_ready:
            self._parsed = self._parse(self._text())
            self._parsed_ready = True
        return cast(T, self._parsed)

    @property
    def finish_reason(self) -> FinishReason | None:
        self._force()
        finish = self._finish()
        return finish.reason if finish else None

    @property
    def usage(self) -> Usage | None:
        """Token usage summed over every round of the turn."""
        self._force()
        return self._usage

    @property
    def raw(self) -> Any:
        """The provider's response (or last stream chunk) of the final round."""
        self._force()
        finish = self._finish()
        return finish.raw if finish else None

    @property
    def diagnostics(self) -> Diagnostics | None:
        self._force()
        finish = self._finish()
        return finish.diagnostics if finish else None

    @property
    def model(self) -> str | None:
        self._force()
        finish = self._finish()
        return finish.model if finish else None

    @property
    def steps(self) -> tuple[Message, ...]:
        """Messages of earlier rounds of this turn: tool calls and their results."""
        self._force()
        return tuple(self._steps)

    @property
    def message(self) -> AssistantMessage:
        """The final output as an assistant message."""
        self._force()
        return AssistantMessage(self._text(), self._calls())

    def all_events(self) -> list[Event]:
        self._force()
        return list(self._events)

    def as_messages(self) -> tuple[Message, ...]:
        """The whole turn as context messages: earlier rounds, then the final output."""
        return (*self.steps, self.message)
