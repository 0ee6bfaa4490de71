"""The checks of a reply, in order, and the retry policy that applies them.

A check is any object with a `name` and `judge(reply) -> Verdict | None` (`checks.check`);
the verdict's `detail` is what the model is told. The first verdict of a check whose rule
is on decides (`parlay.engine.judging` acts on it). `DEFAULT_CHECKS` (`checks.defaults`)
lists parlay's own, most important first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.engine.checks.check import CallIssue, Check, EngineCheck, Evidence, Verdict, first_issue
from parlay.engine.checks.defaults import DEFAULT_CHECKS
from parlay.engine.checks.rules import RULES, Rules, unknown_rules
from parlay.errors import ConfigurationError
from parlay.request import ToolSpec

__all__ = [
    "DEFAULT_CHECKS", "CallIssue", "CallRule", "Check", "EngineCheck", "Evidence", "RetryPolicy",
    "Verdict",
]  # fmt: skip


def _own_name(_: object, __: object, name: str) -> None:
    if not name.isidentifier():
        raise ConfigurationError(f"a rule's name is a Python identifier, not {name!r}")
    if name in RULES:
        raise ConfigurationError(f"{name!r} is the name of one of parlay's own rules")


@frozen
class CallRule:
    """A check of your own about each call: `CallRule("no_wildcards", check)` in
    `PromptedBackend(checks=[*DEFAULT_CHECKS, ...])`. `check(call, tool)` sees each call
    read and repaired, and returns None or a sentence saying what is wrong: the reply is
    asked again with it (under `auto` the model may answer in words instead), and `name`
    is listed in `Diagnostics.rules`. Like the engine's value checks it can only ask: a
    call still rejected when the retries are spent goes on, so a tool that must never run
    with some value refuses it itself."""

    name: str = field(validator=_own_name)
    check: Callable[[ToolCall, ToolSpec], str | None]

    def judge(self, reply: Evidence) -> Verdict | None:
        return first_issue(reply, self.name)


def _checks(checks: Sequence[Check]) -> tuple[Check, ...]:
    return tuple(checks)


@frozen
class RetryPolicy:
    """The retry budget, the rules switched off, and the checks in the order judged."""

    max_retries: int = field(default=2)
    rules: Rules = field(factory=Rules)
    checks: tuple[Check, ...] = field(default=DEFAULT_CHECKS, converter=_checks)

    def __attrs_post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigurationError(f"max_retries must be 0 or more, got {self.max_retries}")
        names = [check.name for check in self.checks if check.name not in RULES]
        if twice := sorted({name for name in names if names.count(name) > 1}):
            raise ConfigurationError(f"two checks named {', '.join(twice)}")
        if unknown := unknown_rules(self.rules.off, names):
            known = ", ".join([*RULES, *names])
            raise ConfigurationError(f"unknown rule(s) {', '.join(unknown)}; the rules: {known}")

    @property
    def call_rules(self) -> tuple[CallRule, ...]:
        """The checks of single calls among them that are switched on, in order."""
        return tuple(c for c in self.checks if isinstance(c, CallRule) and self.rules.on(c.name))

    def judge(self, reply: Evidence) -> Verdict | None:
        """Why this reply should be asked again, or None when it is fine: the first
        verdict of a check whose rule is on, in the order of `checks` (under tool_choice
        none, of those marked `under_none`)."""
        for check in self.checks:
            if not (reply.policy.may_call or getattr(check, "under_none", False)):
                continue  # under tool_choice none, only a check meant for it judges
            if self.rules.on(check.name) and (verdict := check.judge(reply)) is not None:
                return verdict
        return None
