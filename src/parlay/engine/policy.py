"""What a turn allows, decided once from the request (`tool_choice`,
`parallel_tool_calls`, the retry budget): the one place that reads `tool_choice`. The
checks, the grammar, the contract and the retry messages read the `TurnPolicy`
(`tests/contract/test_policy_reads.py` keeps it so)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from attrs import frozen

from parlay.request import ChatRequest, ToolChoice, ToolChoiceMode, ToolSpec

# How an attempt streams (`Diagnostics.streaming`): every event at once; text at once
# and calls held until judged; everything held.
StreamingMode = Literal["live", "hybrid", "buffered"]
Named = TypeVar("Named", bound=ToolSpec)


@frozen
class TurnPolicy:
    mode: ToolChoiceMode
    tool: str | None  # the one tool a named tool_choice asks for
    parallel: bool = True  # may a reply carry several calls
    retries: int = 0  # how many times the engine may ask again

    @classmethod
    def of(cls, request: ChatRequest, retries: int = 0) -> TurnPolicy:
        return cls.of_choice(request.tool_choice, request.parallel_tool_calls, retries)

    @classmethod
    def of_choice(cls, choice: ToolChoice, parallel: bool = True, retries: int = 0) -> TurnPolicy:
        return cls(choice.mode, choice.name, parallel, retries)

    @property
    def choice(self) -> ToolChoice:
        """The choice as the templates read it (`choice.mode`, `choice.name`)."""
        return ToolChoice(self.mode, self.tool)

    @property
    def may_call(self) -> bool:
        return self.mode != "none"

    @property
    def must_call(self) -> bool:
        return self.mode in ("required", "tool")

    @property
    def model_decides(self) -> bool:
        """`auto`: a call or an answer in words, the model's choice."""
        return self.mode == "auto"

    def allowed(self, tools: Sequence[Named]) -> list[Named]:
        """The tools a call may name: all, or the one a named choice asks for."""
        return [t for t in tools if self.tool is None or t.name == self.tool]

    def named(self, tools: Sequence[Named]) -> Named | None:
        """The tool a named choice asks for, when it is among `tools`."""
        return next((t for t in tools if self.tool is not None and t.name == self.tool), None)

    def budget_left(self, attempt: int) -> bool:
        """May attempt number `attempt` (0-based) be followed by another?"""
        return attempt < self.retries

    def may_retry(self, attempt: int) -> bool:
        """Whether a verdict may ask again (under `none` only a reply without words is)."""
        return self.may_call and self.budget_left(attempt)

    def streaming(self, can_retry: bool, retried: bool) -> StreamingMode:
        """Held whole while a reply without a call would be asked again, calls held while
        one may be, live when nothing can follow (or after a retry under `auto`, whose
        short answer may only repeat the retry)."""
        if can_retry:
            return "buffered" if self.must_call else "hybrid"
        return "hybrid" if retried and self.model_decides else "live"
