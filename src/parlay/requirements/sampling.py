"""The attempts of a checked instruction, and the thunk that carries them.

The session hands `Sampler` a way to make an attempt (a branch of itself running the
instruction, or continuing an earlier attempt's branch with a repair message); the
sampler streams each attempt's events as they come, checks the attempt's final answer
(after its tool loop) against every requirement, asks the strategy what next, and at the
end records the `SamplingResult`. `SampledThunk` is the turn's output in the session's
own context: its text, calls, steps and usage are the chosen attempt's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

from parlay.events import Event, Finish, Usage
from parlay.requirements.judge import Judging, validate_all
from parlay.requirements.requirement import Requirement, check
from parlay.requirements.results import Attempt, RequirementsNotMetError, SamplingResult
from parlay.requirements.strategies import NextAttempt, Strategy
from parlay.requirements.tracing import AttemptSpan
from parlay.thunk import ModelOutputThunk, Producer

T = TypeVar("T")

MakeAttempt = Callable[[NextAttempt], tuple[Any, ModelOutputThunk[Any]]]
"""Starts an attempt as the plan says; returns its branch's session and its output."""


def format_requirement(name: str, parse: Callable[[str], Any]) -> Requirement:
    """A requirement, checked by code, that the answer parses as the verb's `format`."""

    def parses(text: str) -> tuple[bool, str]:
        try:
            parse(text)
        except ValueError as error:  # pydantic's ValidationError is one
            return False, " ".join(str(error).split())[:300]
        return True, ""

    return check(f"The answer is JSON matching the {name} schema", parses)


class Sampler:
    """Runs a strategy's attempts; `result` is set once the last is checked."""

    def __init__(
        self,
        requirements: Sequence[Requirement],
        strategy: Strategy,
        make: MakeAttempt,
        judging: Judging,
    ) -> None:
        self.requirements = tuple(requirements)
        self.strategy = strategy
        self.make = make
        self.judging = judging
        self.result: SamplingResult | None = None

    @property
    def strategy_name(self) -> str:
        return type(self.strategy).__name__

    async def run(self) -> AsyncIterator[Event]:
        """The events of every attempt, one attempt after another."""
        attempts: list[Attempt] = []
        plan: NextAttempt | None = NextAttempt()
        while plan is not None:
            async for event in self._attempt(plan, attempts):
                yield event
            plan = self.strategy.next_attempt(tuple(attempts))
        result = SamplingResult(
            tuple(attempts), self.strategy.choose(tuple(attempts)), self.strategy_name
        )
        self.result = result
        if not result.success and getattr(self.strategy, "strict", False):
            failed = "; ".join(str(v) for v in result.chosen.failed)
            raise RequirementsNotMetError(
                f"no attempt of {len(attempts)} met every requirement ({failed})", result=result
            )

    async def _attempt(self, plan: NextAttempt, attempts: list[Attempt]) -> AsyncIterator[Event]:
        number = len(attempts) + 1
        span = AttemptSpan(self.judging.backend, number, self.strategy_name)
        thunk: ModelOutputThunk[Any] | None = None
        try:
            with span.current():  # the attempt's model calls start under its span
                session, thunk = self.make(plan)
                thunk._start(asyncio.get_running_loop())
            async for event in thunk.events():
                yield event
            with span.current():
                validations = await validate_all(self.requirements, thunk.value, self.judging)
        except BaseException as error:
            if thunk is not None:
                thunk.cancel()  # a cancelled turn stops the attempt it is running
            span.end(None, len(self.requirements), error)
            raise
        made = Attempt(
            number,
            thunk,
            session,
            session.branch.name,
            validations,
            follows=plan.follows,
            repair=plan.message,
        )
        attempts.append(made)
        span.end(made.met, len(validations))


class SampledThunk(ModelOutputThunk[T]):
    """A checked instruction's output: it streams every attempt, and reads as the one
    the strategy chose (`.value`, `.tools`, `.steps`, `.parsed`, `.usage`...).

    `sampling` is the `SamplingResult` (every attempt with its validations); `success`
    says whether the chosen attempt meets every requirement, `validations` are its.
    """

    def __init__(self, producer: Producer, *, sampler: Sampler, **kwargs: Any) -> None:
        super().__init__(producer, **kwargs)
        self._sampler = sampler

    def _chosen(self) -> ModelOutputThunk[Any] | None:
        result = self._sampler.result
        return result.chosen.thunk if result is not None else None

    def _round(self) -> list[Event]:
        chosen = self._chosen()
        return chosen._round() if chosen is not None else super()._round()

    def _finish(self) -> Finish | None:
        chosen = self._chosen()
        return chosen._finish() if chosen is not None else super()._finish()

    @property
    def steps(self) -> tuple[Any, ...]:
        """The chosen attempt's earlier rounds: its tool calls and their results."""
        self._force()
        chosen = self._chosen()
        return chosen.steps if chosen is not None else ()

    @property
    def usage(self) -> Usage | None:
        """The chosen attempt's tokens (`sampling.usage`: every attempt's and judge's)."""
        self._force()
        chosen = self._chosen()
        return chosen.usage if chosen is not None else None

    @property
    def sampling(self) -> SamplingResult:
        """Every attempt with its validations, and the one chosen."""
        self._force()
        assert self._sampler.result is not None  # set before the thunk completes
        return self._sampler.result

    @property
    def success(self) -> bool:
        """Whether the chosen attempt meets every requirement."""
        return self.sampling.success

    @property
    def validations(self) -> tuple[Any, ...]:
        """The chosen attempt's validations, one per requirement."""
        return self.sampling.validations

    def __repr__(self) -> str:
        base = super().__repr__()
        result = self._sampler.result
        if result is None or not self.is_computed:
            return base
        met = "met" if result.success else "NOT met"
        return (
            f"{base[:-1]} attempt {result.chosen.number} of {len(result.attempts)}, "
            f"requirements {met}>"
        )
