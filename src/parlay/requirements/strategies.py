"""Strategies: after each attempt, whether to try again and how, and which attempt wins.

A strategy is any object with the two methods of `Strategy`. parlay's own derive from
`SamplingStrategy`, which also carries how requirements are judged (`judge=`, another
backend; `template_dir=`, a folder overriding `requirements/judge.j2` and
`requirements/repair.j2`) and whether a budget that runs out raises (`strict=True`)
rather than returning the best attempt with `success` False.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from attrs import field, frozen

from parlay.backends.base import Backend
from parlay.errors import InvalidRequestError
from parlay.requirements.results import Attempt
from parlay.templating import render

REPAIR_TEMPLATE = "requirements/repair.j2"


@frozen
class NextAttempt:
    """What to try next: the instruction afresh (`follows` None), or the branch of
    attempt `follows` continued with `message` (a user turn telling what failed).
    `temperature` and `seed`, when set, replace the turn's for this attempt."""

    follows: Attempt | None = None
    message: str | None = None
    temperature: float | None = None
    seed: int | None = None


@runtime_checkable
class Strategy(Protocol):
    """Decides after every attempt. `attempts` is never empty, oldest first."""

    def next_attempt(self, attempts: Sequence[Attempt]) -> NextAttempt | None:
        """The next try, or None to stop."""
        ...

    def choose(self, attempts: Sequence[Attempt]) -> Attempt:
        """The attempt the session keeps."""
        ...


def best(attempts: Sequence[Attempt]) -> Attempt:
    """The attempt meeting the most requirements; the earliest among equals."""
    return max(attempts, key=lambda a: (a.met, -a.number))


def repair_message(attempt: Attempt, template_dir: str | os.PathLike[str] | None = None) -> str:
    """The user turn telling the model which requirements `attempt` failed, and why
    (`requirements/repair.j2`)."""
    failures = [{"requirement": v.requirement.name, "reason": v.reason} for v in attempt.failed]
    return render(REPAIR_TEMPLATE, template_dir, failures=failures)


def _positive(_instance: object, attribute: object, value: int) -> None:
    if value < 1:
        name = getattr(attribute, "name", "budget")
        raise InvalidRequestError(f"{name} must be at least 1, got {value}")


@frozen(kw_only=True)
class SamplingStrategy:
    """The options every parlay strategy has (see the module's docstring)."""

    judge: Backend | None = field(default=None, eq=False)
    template_dir: str | os.PathLike[str] | None = None
    strict: bool = False

    def choose(self, attempts: Sequence[Attempt]) -> Attempt:
        return best(attempts)


def _fresh(temperature: float | None, attempts: Sequence[Attempt]) -> NextAttempt:
    # A greedy model answers the same prompt the same way: a new try needs sampling.
    if temperature is None:
        return NextAttempt()
    return NextAttempt(temperature=temperature, seed=len(attempts) + 1)


@frozen
class RejectionSampling(SamplingStrategy):
    """Ask again from the instruction, up to `budget` attempts, until one meets every
    requirement (Mellea's `RejectionSamplingStrategy(loop_budget=...)`). A greedy model
    (temperature 0, as the embedded one) repeats itself: give later attempts a
    `temperature` (each its own seed, so a run is reproducible)."""

    budget: int = field(default=3, validator=_positive)
    temperature: float | None = None

    def next_attempt(self, attempts: Sequence[Attempt]) -> NextAttempt | None:
        if attempts[-1].passed or len(attempts) >= self.budget:
            return None
        return _fresh(self.temperature, attempts)


@frozen
class Repair(SamplingStrategy):
    """Tell the model which requirements failed and why, and let it answer again in the
    same branch, up to `budget` attempts."""

    budget: int = field(default=3, validator=_positive)

    def next_attempt(self, attempts: Sequence[Attempt]) -> NextAttempt | None:
        last = attempts[-1]
        if last.passed or len(attempts) >= self.budget:
            return None
        return NextAttempt(follows=last, message=repair_message(last, self.template_dir))


@frozen
class BestOfN(SamplingStrategy):
    """Make `n` attempts from the instruction and keep the one meeting the most
    requirements (the earliest among equals); `temperature` as for `RejectionSampling`."""

    n: int = field(default=3, validator=_positive)
    temperature: float | None = None

    def next_attempt(self, attempts: Sequence[Attempt]) -> NextAttempt | None:
        return _fresh(self.temperature, attempts) if len(attempts) < self.n else None


__all__ = [
    "BestOfN",
    "NextAttempt",
    "RejectionSampling",
    "Repair",
    "SamplingStrategy",
    "Strategy",
    "best",
    "repair_message",
]
