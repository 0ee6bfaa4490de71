"""The retry policy: when a reply is not good enough, and why.

Triggers, in order: a call to a tool that does not exist; arguments that fail the
schema; a reply whose every call repeats one the history already answered (small models
loop); an action that cannot be read; under `auto`, a call the grammar forced on a model
that leaned to a tool not offered (see `forced`); under `auto`, a first reply that calls
while the model leaned to answering in words (opt-in, see `leaning`); under `auto`, a
reply whose every call goes to a tool sharing no word with the request (opt-in, see
`relevance`); a call to
another tool than the one named; an argument value copied from a few-shot example that
the conversation never mentions; under `auto`, a required value that no one in the
conversation gave, or one text poured into three or more arguments (see `grounding`); a
forced choice (`required` / a named tool) answered without the call it asked for; a
plain answer that is only a stand-in of the format instructions ("your answer"); a plain
answer quoting an example's made-up result (as what a named tool returned: a pretended
call, which the retry asks about); refusal language; under `auto`, a plain first answer
to a request that names what a tool does (see `relevance`).
A hard refusal under `auto` is an answer (the model may decline a task), so
only a soft one ("I can't access real-time data" while a tool could) is retried there.
A plain answer under `auto` is legitimate, so under `auto` the retry messages for an
unknown tool, a refusal or a copied value also allow one: the model may be telling us
that no tool fits (on BFCL's irrelevance questions, retries that demanded a call turned
right abstentions into calls with made-up values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.engine.checks.forced import NameChoice
from parlay.engine.checks.refusal import RefusalSignal
from parlay.engine.checks.rules import RULES, OwnRuleName, Rules, VerdictReason
from parlay.engine.contract.parser import ParseProblem
from parlay.engine.contract.parser.results import ProblemKind
from parlay.request import ToolChoice, ToolSpec

UNREADABLE: tuple[ProblemKind, ...] = ("no_tool_name", "unreadable_arguments")
# What the engine finds wrong with one call (`checks.check_call`): each is also the
# reason of the verdict it leads to.
IssueKind = Literal[
    "unknown_tool", "invalid_arguments", "example_value", "invented_value", "same_value",
    "repeated_call",
]  # fmt: skip


@frozen
class CallIssue:
    """A parsed call the engine cannot hand on: unknown tool or bad arguments."""

    call: ToolCall
    kind: IssueKind | OwnRuleName
    detail: str
    spec: ToolSpec | None = None
    # The argument(s) at fault (example_value, invented_value, same_value): named in the
    # retry message.
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
class Reply:
    """What the policy judges of one reply (see `RetryPolicy.judge`)."""

    calls: Sequence[ToolCall]
    issues: Sequence[CallIssue]
    problems: Sequence[ParseProblem]
    choice: ToolChoice
    refusal: RefusalSignal | None
    tools: Sequence[ToolSpec]
    copied_answer: str
    fitting_tool: ToolSpec | None
    pretended_tool: ToolSpec | None
    forced: NameChoice | None
    placeholder: bool
    # Offered tools sharing no word with the request (`relevance.unrelated_tools`).
    unrelated: frozenset[str] = frozenset()
    # The first reply's lean to answering, when it leaned to words (`leaning`).
    leaned: float | None = None


def _tool_named(tools: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    return next((tool for tool in tools if tool.name == name), None)


class Check(Protocol):
    """One check of the policy: the verdict it gives a reply, or None. `name` is the rule
    that switches it (`rules.RULES`; None: always on, as the user's own call rules are
    switched one by one where their issues are found)."""

    @property
    def name(self) -> str | None: ...

    def judge(self, reply: Reply) -> Verdict | None: ...


@frozen
class RuleCheck:
    """A check made of a rule's name and a function judging a reply."""

    name: str | None
    find: Callable[[Reply], Verdict | None]

    def judge(self, reply: Reply) -> Verdict | None:
        return self.find(reply)


def _issue(kind: IssueKind, auto_only: bool = False) -> Callable[[Reply], Verdict | None]:
    """The verdict of the first call with an issue of `kind`."""

    def find(reply: Reply) -> Verdict | None:
        if auto_only and reply.choice.mode != "auto":
            # Under a forced choice the user asked for a call; under `auto` a made-up
            # value most often means the request was not for this tool at all.
            return None
        issue = next(iter(issues_of(reply.issues, kind)), None)
        if issue is None:
            return None
        if kind == "unknown_tool":
            return Verdict(kind, issue.call.name)
        return Verdict(kind, issue.detail, issue.spec, argument=issue.argument)

    return find


def _repeated_call(reply: Reply) -> Verdict | None:
    if not only_repeats(reply.calls, reply.issues):
        return None
    # Every call asks again for a result the history already holds.
    repeats = issues_of(reply.issues, "repeated_call")
    return Verdict("repeated_call", ", ".join(i.call.name for i in repeats))


def _unreadable(reply: Reply) -> Verdict | None:
    unreadable = [p for p in reply.problems if p.kind in UNREADABLE]
    return Verdict("unreadable", "; ".join(p.detail for p in unreadable)) if unreadable else None


def _forced_call(reply: Reply) -> Verdict | None:
    if reply.forced is None or reply.choice.mode != "auto":
        return None
    spec = _tool_named(reply.tools, reply.forced.call.name)
    return Verdict("forced_call", reply.forced.describe(), spec)


def _leaned_to_words(reply: Reply) -> Verdict | None:
    if reply.leaned is None or reply.choice.mode != "auto" or not reply.calls:
        return None
    share = f"{reply.leaned:.0%} of its weight on answering"
    return Verdict("leaned_to_words", share, _tool_named(reply.tools, reply.calls[0].name))


def _unrelated_call(reply: Reply) -> Verdict | None:
    calls = reply.calls
    if (
        reply.choice.mode != "auto"
        or not calls
        or any(c.name not in reply.unrelated for c in calls)
    ):
        return None
    names = ", ".join(dict.fromkeys(c.name for c in calls))
    return Verdict("unrelated_call", names, _tool_named(reply.tools, calls[0].name))


def _good(reply: Reply) -> list[ToolCall]:
    """The reply's calls to tools that exist."""
    names = {t.name for t in reply.tools}
    return [c for c in reply.calls if c.name in names]


def _wrong_tool(reply: Reply) -> Verdict | None:
    good, choice = _good(reply), reply.choice
    if choice.mode != "tool" or not good or any(c.name == choice.name for c in good):
        return None
    return Verdict("wrong_tool", ", ".join(c.name for c in good))


def _own_rules(reply: Reply) -> Verdict | None:
    """The first issue a rule of the user's own found (`rules.CallRule`)."""
    issue = next((i for i in reply.issues if i.kind not in RULES), None)
    return Verdict(issue.kind, issue.detail, issue.spec) if issue else None


def _forced_refusal(reply: Reply) -> Verdict | None:
    if not reply.choice.forces_call or _good(reply) or reply.refusal is None:
        return None
    return Verdict("refusal", reply.refusal.phrase, about_text=True)


def _no_call(reply: Reply) -> Verdict | None:
    if not reply.choice.forces_call or _good(reply):
        return None
    return Verdict("no_call", "", about_text=True)


def _answer(find: Callable[[Reply], Verdict | None]) -> Callable[[Reply], Verdict | None]:
    """`find` on a reply that makes no call: a plain answer."""
    return lambda reply: None if reply.calls else find(reply)


def _placeholder(reply: Reply) -> Verdict | None:
    return Verdict("placeholder_answer", "", about_text=True) if reply.placeholder else None


def _pretended_call(reply: Reply) -> Verdict | None:
    pretended = reply.pretended_tool
    if not reply.copied_answer or pretended is None:
        return None
    return Verdict("pretended_call", pretended.name, pretended, about_text=True)


def _example_answer(reply: Reply) -> Verdict | None:
    if not reply.copied_answer:
        return None
    return Verdict("example_answer", reply.copied_answer, about_text=True)


def _soft_refusal(reply: Reply) -> Verdict | None:
    if reply.refusal is None or reply.refusal.kind != "soft":
        return None
    return Verdict("refusal", reply.refusal.phrase, about_text=True)


def _missed_tool(reply: Reply) -> Verdict | None:
    tool = reply.fitting_tool
    if reply.choice.mode != "auto" or tool is None:
        return None
    return Verdict("missed_tool", tool.name, tool, about_text=True)


# The policy's checks, most important first: the first verdict of a check whose rule is
# on decides (`rules.VERDICT_RULES` describes each).
CHECKS: tuple[Check, ...] = (
    RuleCheck("unknown_tool", _issue("unknown_tool")),
    RuleCheck("invalid_arguments", _issue("invalid_arguments")),
    RuleCheck("repeated_call", _repeated_call),
    RuleCheck("unreadable", _unreadable),
    RuleCheck("forced_call", _forced_call),
    RuleCheck("leaned_to_words", _leaned_to_words),
    RuleCheck("unrelated_call", _unrelated_call),
    RuleCheck("wrong_tool", _wrong_tool),
    RuleCheck("example_value", _issue("example_value")),
    RuleCheck("invented_value", _issue("invented_value", auto_only=True)),
    RuleCheck("same_value", _issue("same_value", auto_only=True)),
    RuleCheck(None, _own_rules),
    RuleCheck("refusal", _forced_refusal),
    RuleCheck("no_call", _no_call),
    RuleCheck("placeholder_answer", _answer(_placeholder)),
    RuleCheck("pretended_call", _answer(_pretended_call)),
    RuleCheck("example_answer", _answer(_example_answer)),
    RuleCheck("refusal", _answer(_soft_refusal)),
    RuleCheck("missed_tool", _answer(_missed_tool)),
)


def only_repeats(calls: Sequence[ToolCall], issues: Sequence[CallIssue]) -> bool:
    """Whether the reply has calls and every one repeats a call the history answered."""
    return bool(calls) and len(issues_of(issues, "repeated_call")) == len(calls)


def issues_of(issues: Sequence[CallIssue], kind: IssueKind) -> list[CallIssue]:
    return [i for i in issues if i.kind == kind]


@frozen
class RetryPolicy:
    max_retries: int = field(default=2)
    rules: Rules = field(factory=Rules)
    # The checks in the order they are judged (`CHECKS`).
    checks: tuple[Check, ...] = field(default=CHECKS)

    def __attrs_post_init__(self) -> None:
        if self.max_retries < 0:
            from parlay.errors import ConfigurationError

            raise ConfigurationError(f"max_retries must be 0 or more, got {self.max_retries}")

    def judge(
        self,
        *,
        calls: Sequence[ToolCall],
        issues: Sequence[CallIssue],
        problems: Sequence[ParseProblem],
        choice: ToolChoice,
        refusal: RefusalSignal | None,
        tools: Sequence[ToolSpec],
        copied_answer: str = "",
        fitting_tool: ToolSpec | None = None,
        pretended_tool: ToolSpec | None = None,
        forced: NameChoice | None = None,
        placeholder: bool = False,
        unrelated: frozenset[str] = frozenset(),
        leaned: float | None = None,
    ) -> Verdict | None:
        """Why this reply should be retried, or None when it is fine: the first verdict
        of a check whose rule is on, in the order of `checks`."""
        if choice.mode == "none":
            return None
        reply = Reply(
            calls=calls,
            issues=issues,
            problems=problems,
            choice=choice,
            refusal=refusal,
            tools=tools,
            copied_answer=copied_answer,
            fitting_tool=fitting_tool,
            pretended_tool=pretended_tool,
            forced=forced,
            placeholder=placeholder,
            unrelated=unrelated,
            leaned=leaned,
        )
        for check in self.checks:
            switched_on = check.name is None or self.rules.on(check.name)
            if switched_on and (verdict := check.judge(reply)) is not None:
                return verdict
        return None
