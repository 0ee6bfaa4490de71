"""The checks of a reply, in order, and the retry policy that applies them.

A check is any object with a `name` and `judge(reply) -> Verdict | None`; the verdict's
`detail` is what the model is told. The first verdict of a check whose rule is on decides
(`parlay.engine.judging` acts on it). `DEFAULT_CHECKS` lists parlay's own, most
important first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.engine.checks.confidence import NameChoice
from parlay.engine.checks.refusal import RefusalSignal
from parlay.engine.checks.rules import RULES, OwnRuleName, Rules, VerdictReason, unknown_rules
from parlay.engine.contract.parser import ParseProblem
from parlay.engine.contract.parser.results import ProblemKind
from parlay.engine.policy import TurnPolicy
from parlay.errors import ConfigurationError
from parlay.request import ToolSpec

UNREADABLE: tuple[ProblemKind, ...] = ("no_tool_name", "unreadable_arguments")
# What `calls.check_call` finds wrong with one call: each is also its verdict's reason.
IssueKind = Literal[
    "unknown_tool", "invalid_arguments", "example_value", "invented_value", "repeated_call",
]  # fmt: skip


@frozen
class CallIssue:
    """A parsed call the engine cannot hand on, and why; `argument`: the one at fault
    (example_value, invented_value), named in the retry message."""

    call: ToolCall
    kind: IssueKind | OwnRuleName
    detail: str
    spec: ToolSpec | None = None
    argument: str = ""


@frozen
class Verdict:
    reason: VerdictReason | OwnRuleName
    detail: str = ""
    tool: ToolSpec | None = None
    # Whether the reply's text alone decided it (the text must not have been shown yet).
    about_text: bool = False
    argument: str = ""


@frozen
class Evidence:
    """What a check judges of one reply: its calls (as written, then `issues` found in
    them once repaired), the turn's `policy` and `tools`, and what the engine read."""

    calls: Sequence[ToolCall]
    issues: Sequence[CallIssue]
    problems: Sequence[ParseProblem]
    policy: TurnPolicy
    tools: Sequence[ToolSpec]
    text: str = ""
    refusal: RefusalSignal | None = None
    copied_answer: str = ""
    pretended_tool: ToolSpec | None = None
    forced: NameChoice | None = None
    placeholder: bool = False
    # The first reply's share of the model's weight on answering, when that was more
    # than `min_call_confidence` leaves to it (`leaning`).
    unsure: float | None = None
    earlier: tuple[str, ...] = ()  # the reasons of the retries this turn made so far
    # The reply's text was only parlay's own words, taken out whole by the echo trim.
    echo: bool = False


class Check(Protocol):
    """One check of the policy: the verdict it gives a reply, or None. `name` is the rule
    that switches it (`rules_off`) and names it in `Diagnostics.rules`."""

    @property
    def name(self) -> str: ...

    def judge(self, reply: Evidence) -> Verdict | None: ...


@frozen
class RuleCheck:
    """A check made of a rule's name and a function judging a reply; `under_none`: it
    judges replies under tool_choice none too (where no other check does)."""

    name: str
    judge: Callable[[Evidence], Verdict | None]
    under_none: bool = False


def _first_issue(reply: Evidence, kind: str) -> Verdict | None:
    issue = next((i for i in reply.issues if i.kind == kind), None)
    if issue is None:
        return None
    return Verdict(issue.kind, issue.detail, issue.spec, argument=issue.argument)


def _issue(kind: IssueKind, auto_only: bool = False) -> Callable[[Evidence], Verdict | None]:
    """`auto_only`: under a forced choice the user asked for a call; under `auto` a made-up
    value most often means the request was not for this tool at all."""
    return lambda r: None if auto_only and not r.policy.model_decides else _first_issue(r, kind)


def _repeated_call(reply: Evidence) -> Verdict | None:
    """Every call asks again for a result the history already holds."""
    names = ", ".join(i.call.name for i in reply.issues if i.kind == "repeated_call")
    return Verdict("repeated_call", names) if only_repeats(reply.calls, reply.issues) else None


def _unreadable(reply: Evidence) -> Verdict | None:
    unreadable = [p.detail for p in reply.problems if p.kind in UNREADABLE]
    return Verdict("unreadable", "; ".join(unreadable)) if unreadable else None


def _tool_named(tools: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    return next((tool for tool in tools if tool.name == name), None)


def _forced_call(reply: Evidence) -> Verdict | None:
    if reply.forced is None or not reply.policy.model_decides:
        return None
    spec = _tool_named(reply.tools, reply.forced.call.name)
    return Verdict("forced_call", reply.forced.describe(), spec)


def _unsure_call(reply: Evidence) -> Verdict | None:
    if reply.unsure is None or not reply.policy.model_decides or not reply.calls:
        return None
    share = f"{1 - reply.unsure:.0%} of its weight on calling"
    return Verdict("unsure_call", share, _tool_named(reply.tools, reply.calls[0].name))


def _good(reply: Evidence) -> list[ToolCall]:
    return [c for c in reply.calls if _tool_named(reply.tools, c.name)]


def _wrong_tool(reply: Evidence) -> Verdict | None:
    good, policy = _good(reply), reply.policy
    if policy.tool is None or not good or any(c.name == policy.tool for c in good):
        return None
    return Verdict("wrong_tool", ", ".join(c.name for c in good))


def _forced_refusal(reply: Evidence) -> Verdict | None:
    if not reply.policy.must_call or _good(reply) or reply.refusal is None:
        return None
    return Verdict("refusal", reply.refusal.phrase, about_text=True)


def _no_call(reply: Evidence) -> Verdict | None:
    no_call = reply.policy.must_call and not _good(reply)
    return Verdict("no_call", about_text=True) if no_call else None


def _answer(find: Callable[[Evidence], Verdict | None]) -> Callable[[Evidence], Verdict | None]:
    """`find` on a reply that makes no call: a plain answer."""
    return lambda reply: None if reply.calls else find(reply)


def _placeholder(reply: Evidence) -> Verdict | None:
    return Verdict("placeholder_answer", about_text=True) if reply.placeholder else None


def _pretended_call(reply: Evidence) -> Verdict | None:
    if not reply.copied_answer or (tool := reply.pretended_tool) is None:
        return None
    return Verdict("pretended_call", tool.name, tool, about_text=True)


def _example_answer(reply: Evidence) -> Verdict | None:
    copied = reply.copied_answer
    return Verdict("example_answer", copied, about_text=True) if copied else None


def _refusal(reply: Evidence) -> Verdict | None:
    """A refusal while tools are offered, asked about once: the model decides whether a
    tool answers it after all or its answer stands."""
    if reply.refusal is None or not reply.tools or "refusal" in reply.earlier:
        return None
    return Verdict("refusal", reply.refusal.phrase, about_text=True)


def _words_only(reply: Evidence) -> Verdict | None:
    """Under tool_choice none, a reply that left no text of its own (only calls, nothing,
    or parlay's words echoed): the turn must end in text."""
    if reply.policy.may_call or (reply.text.strip() and not reply.echo):
        return None
    return Verdict("words_only", ", ".join(call.name for call in reply.calls))


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
        return _first_issue(reply, self.name)


# parlay's checks, most important first (`rules.VERDICT_RULES` describes each).
DEFAULT_CHECKS: tuple[Check, ...] = (
    RuleCheck("unknown_tool", _issue("unknown_tool")),
    RuleCheck("invalid_arguments", _issue("invalid_arguments")),
    RuleCheck("repeated_call", _repeated_call),
    RuleCheck("unreadable", _unreadable),
    RuleCheck("forced_call", _forced_call),
    RuleCheck("unsure_call", _unsure_call),
    RuleCheck("wrong_tool", _wrong_tool),
    RuleCheck("example_value", _issue("example_value")),
    RuleCheck("invented_value", _issue("invented_value", auto_only=True)),
    RuleCheck("refusal", _forced_refusal),
    RuleCheck("no_call", _no_call),
    RuleCheck("placeholder_answer", _answer(_placeholder)),
    RuleCheck("pretended_call", _answer(_pretended_call)),
    RuleCheck("example_answer", _answer(_example_answer)),
    RuleCheck("refusal", _answer(_refusal)),
    RuleCheck("words_only", _words_only, under_none=True),
)


def only_repeats(calls: Sequence[ToolCall], issues: Sequence[CallIssue]) -> bool:
    """Whether the reply has calls and every one repeats a call the history answered."""
    return bool(calls) and sum(i.kind == "repeated_call" for i in issues) == len(calls)


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
