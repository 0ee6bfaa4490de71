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

from collections.abc import Iterator, Sequence
from typing import Literal

from attrs import field, frozen

from parlay.context import ToolCall
from parlay.contract.forced import NameChoice
from parlay.contract.parser import ParseProblem
from parlay.contract.refusal import RefusalSignal
from parlay.contract.rules import RULES, OwnRuleName, Rules, VerdictReason
from parlay.request import ToolChoice, ToolSpec

UNREADABLE = ("no_tool_name", "unreadable_arguments")
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
class RetryPolicy:
    max_retries: int = field(default=2)
    rules: Rules = field(factory=Rules)

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
        """Why this reply should be retried, or None when it is fine: the first verdict,
        in the order of `rules.VERDICT_RULES`, whose rule is on."""
        if choice.mode == "none":
            return None
        reply = Reply(
            calls, issues, problems, choice, refusal, tools, copied_answer, fitting_tool,
            pretended_tool, forced, placeholder, unrelated, leaned,
        )  # fmt: skip
        return next((v for v in _verdicts(reply) if self.rules.on(v.reason)), None)


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


def _verdicts(reply: Reply) -> Iterator[Verdict]:
    """Every verdict that holds for the reply, most important first."""
    calls, issues, choice, tools = reply.calls, reply.issues, reply.choice, reply.tools
    yield from (Verdict("unknown_tool", i.call.name) for i in _of(issues, "unknown_tool"))
    for issue in _of(issues, "invalid_arguments"):
        yield Verdict("invalid_arguments", issue.detail, issue.spec)
    if only_repeats(calls, issues):
        # Every call asks again for a result the history already holds.
        repeats = _of(issues, "repeated_call")
        yield Verdict("repeated_call", ", ".join(i.call.name for i in repeats))
    unreadable = [p for p in reply.problems if p.kind in UNREADABLE]
    if unreadable:
        yield Verdict("unreadable", "; ".join(p.detail for p in unreadable))
    if reply.forced is not None and choice.mode == "auto":
        spec = _tool_named(tools, reply.forced.call.name)
        yield Verdict("forced_call", reply.forced.describe(), spec)
    if reply.leaned is not None and choice.mode == "auto" and calls:
        share = f"{reply.leaned:.0%} of its weight on answering"
        yield Verdict("leaned_to_words", share, _tool_named(tools, calls[0].name))
    if choice.mode == "auto" and calls and all(c.name in reply.unrelated for c in calls):
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        yield Verdict("unrelated_call", names, _tool_named(tools, calls[0].name))
    good = [c for c in calls if c.name in {t.name for t in tools}]
    if choice.mode == "tool" and good and all(c.name != choice.name for c in good):
        yield Verdict("wrong_tool", ", ".join(c.name for c in good))
    for issue in _of(issues, "example_value"):
        yield Verdict("example_value", issue.detail, issue.spec, argument=issue.argument)
    if choice.mode == "auto":
        # Under a forced choice the user asked for a call; under `auto` a made-up
        # value most often means the request was not for this tool at all.
        made_up: tuple[IssueKind, ...] = ("invented_value", "same_value")
        for kind in made_up:
            for issue in _of(issues, kind):
                yield Verdict(kind, issue.detail, issue.spec, argument=issue.argument)
    for issue in issues:
        if issue.kind not in RULES:  # a rule of the user's own (`rules.CallRule`)
            yield Verdict(issue.kind, issue.detail, issue.spec)
    if choice.forces_call and not good:
        if reply.refusal is not None:
            yield Verdict("refusal", reply.refusal.phrase, about_text=True)
        yield Verdict("no_call", "", about_text=True)
    if calls:
        return
    if reply.placeholder:
        yield Verdict("placeholder_answer", "", about_text=True)
    pretended = reply.pretended_tool
    if reply.copied_answer and pretended is not None:
        yield Verdict("pretended_call", pretended.name, pretended, about_text=True)
    if reply.copied_answer:
        yield Verdict("example_answer", reply.copied_answer, about_text=True)
    if reply.refusal is not None and reply.refusal.kind == "soft":
        yield Verdict("refusal", reply.refusal.phrase, about_text=True)
    if choice.mode == "auto" and reply.fitting_tool is not None:
        yield Verdict("missed_tool", reply.fitting_tool.name, reply.fitting_tool, about_text=True)


def only_repeats(calls: Sequence[ToolCall], issues: Sequence[CallIssue]) -> bool:
    """Whether the reply has calls and every one repeats a call the history answered."""
    return bool(calls) and len(_of(issues, "repeated_call")) == len(calls)


def _of(issues: Sequence[CallIssue], kind: IssueKind) -> list[CallIssue]:
    return [i for i in issues if i.kind == kind]
