"""What a turn allows, decided once from the request (`tool_choice`,
`parallel_tool_calls`, the retry budget), so no other part tests `tool_choice` itself."""

from __future__ import annotations

from typing import Literal

from attrs import frozen

from parlay.request import ChatRequest, ToolChoiceMode

# How an attempt streams (`Diagnostics.streaming`): every event at once; text at once
# and calls held until judged; everything held.
StreamingMode = Literal["live", "hybrid", "buffered"]


@frozen
class TurnPolicy:
    mode: ToolChoiceMode
    tool: str | None  # the one tool a named tool_choice asks for
    parallel: bool  # may a reply carry several calls
    retries: int  # how many times the engine may ask again

    @classmethod
    def of(cls, request: ChatRequest, retries: int) -> TurnPolicy:
        choice = request.tool_choice
        return cls(choice.mode, choice.name, request.parallel_tool_calls, retries)

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
