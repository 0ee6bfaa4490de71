"""What a checked instruction keeps: every attempt with its validations, and the choice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from parlay.context import AssistantMessage
from parlay.errors import ParlayError
from parlay.events import Usage
from parlay.requirements.requirement import JudgedBy, Validation

if TYPE_CHECKING:
    from parlay.thunk import ModelOutputThunk


@frozen(eq=False)
class Attempt:
    """One try at the instruction: a branch of the session and what checking gave.

    `number` counts from 1; `thunk` is the attempt's output in its branch (`session`,
    named `branch` in `session.branches`); `follows` is the attempt a repair continued
    from (None: a fresh try from the instruction). `repair` is the message it was given.
    """

    number: int
    thunk: ModelOutputThunk[Any] = field(repr=False)
    session: Any = field(repr=False)
    branch: str
    validations: tuple[Validation, ...]
    follows: Attempt | None = field(default=None, repr=False)
    repair: str | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        """True when every requirement holds."""
        return all(v.passed for v in self.validations)

    @property
    def met(self) -> int:
        """How many requirements hold."""
        return sum(1 for v in self.validations if v.passed)

    @property
    def failed(self) -> tuple[Validation, ...]:
        return tuple(v for v in self.validations if not v.passed)

    @property
    def value(self) -> str:
        return self.thunk.value

    def __str__(self) -> str:
        lines = [f"attempt {self.number} ({self.branch}): {self.met}/{len(self.validations)} met"]
        lines.extend(f"  {v}" for v in self.validations)
        return "\n".join(lines)


@frozen(eq=False)
class SamplingResult:
    """Every attempt of a checked instruction, oldest first, and the one chosen.

    `success` is whether the chosen attempt meets every requirement; when it does not,
    the strategy's budget ran out (`budget_exhausted`) and `chosen` is the best attempt
    it saw. `requests` counts model requests, judges' included; `usage` sums tokens.
    """

    attempts: tuple[Attempt, ...]
    chosen: Attempt
    strategy: str

    @property
    def success(self) -> bool:
        return self.chosen.passed

    @property
    def budget_exhausted(self) -> bool:
        return not self.success

    @property
    def validations(self) -> tuple[Validation, ...]:
        """The chosen attempt's."""
        return self.chosen.validations

    @property
    def requests(self) -> int:
        """Model requests: each attempt's rounds, and each judge's question."""
        rounds = sum(
            1 + sum(isinstance(m, AssistantMessage) for m in a.thunk.steps) for a in self.attempts
        )
        judged = sum(1 for a in self.attempts for v in a.validations if v.by is JudgedBy.MODEL)
        return rounds + judged

    @property
    def usage(self) -> Usage:
        total = Usage()
        for attempt in self.attempts:
            total = total + (attempt.thunk.usage or Usage())
            for v in attempt.validations:
                total = total + (v.usage or Usage())
        return total

    def __str__(self) -> str:
        state = "met" if self.success else "NOT met (budget ran out)"
        head = f"{self.strategy}: {len(self.attempts)} attempts, chose {self.chosen.number}, "
        return "\n".join([head + f"requirements {state}", *map(str, self.attempts)])


class RequirementsNotMetError(ParlayError):
    """A checked instruction's budget ran out and the strategy was asked to raise
    (`strict=True`). `result` holds every attempt; `result.chosen` is the best one."""

    def __init__(self, message: str, *, result: SamplingResult) -> None:
        super().__init__(message)
        self.result = result
