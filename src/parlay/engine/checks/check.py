"""What a check of a reply is made of: the evidence it reads, the verdict it gives, and, for
parlay's own checks, its description, its message and its traits.

A check is any object with a `name` and `judge(reply) -> Verdict | None` (`Check`); the
verdict's `detail` is what the model is told. Each of parlay's own is an `EngineCheck`
in the module of what it looks at, and is named nowhere else but the default list
(`checks.defaults`): what the engine does after its verdict reads its `Traits`, what the
model is told is the template it names (`templates/contract/retry/`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NewType, Protocol

from attrs import evolve, frozen

from parlay.context import ToolCall
from parlay.engine.checks.confidence import NameChoice
from parlay.engine.checks.refusal import RefusalSignal
from parlay.engine.contract.parser import ParseProblem
from parlay.engine.policy import TurnPolicy
from parlay.request import ToolSpec

# The name of a rule of the user's own (`CallRule.name`), told apart from the engine's.
OwnRuleName = NewType("OwnRuleName", str)
# The template of a retry message no check of parlay's names: a check of your own.
OWN_MESSAGE = "contract/retry.j2"


@frozen
class CallIssue:
    """A parsed call the engine cannot hand on, and why (`kind`: the name of the check
    that found it, and gives it as its verdict); `argument`: the one at fault, named in
    the retry message."""

    call: ToolCall
    kind: str
    detail: str
    spec: ToolSpec | None = None
    argument: str = ""


@frozen
class Verdict:
    reason: str
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
class Traits:
    """What the engine does after a check's verdict (all off: a check of your own)."""

    # It judges replies under tool_choice none (where no other check does): the turn
    # must end in words, so its retry may go under the answer-only grammar.
    under_none: bool = False
    # Its verdict is on what the examples taught or no one gave (a made-up value or
    # result): `check_values` switches it, and the retry goes without the examples and
    # without the reply, so nothing is left to copy.
    taught: bool = False
    made_up_value: bool = False  # a call's value the conversation did not give
    # After its verdict, a later made-up value means the turn has nothing real to call with.
    doubtful: bool = False
    # After it, the model most likely answers best in words (`words_fallback`).
    to_words: bool = False
    # Under auto, the retry message offers an answer in words as well as a call.
    may_answer: bool = False
    # Its verdict is on calls the history answered: the retry leaves their tools out.
    repeats: bool = False
    # Its verdict names a tool the model may still call: the retry's grammar holds it to that one.
    names_tool: bool = False
    # It earned its place on the development benchmark (bench/results/bfcl-ablation.md)
    # rather than keeping a failure a user would see from reaching them (a guard).
    earned: bool = False


@frozen
class EngineCheck:
    """One of parlay's checks: its name, what it judges, what it is (`description`,
    listed by `rules.RULES`), the template of its retry message and its traits."""

    name: str
    judge: Callable[[Evidence], Verdict | None]
    description: str = ""
    message: str = OWN_MESSAGE
    traits: Traits = Traits()

    @property
    def under_none(self) -> bool:
        return self.traits.under_none

    def judging(self, judge: Callable[[Evidence], Verdict | None]) -> EngineCheck:
        """The same check (name, message, traits) judging at another point of the list."""
        return evolve(self, judge=judge)


def first_issue(reply: Evidence, kind: str) -> Verdict | None:
    """The verdict of the first issue of this kind found in the reply's calls."""
    issue = next((i for i in reply.issues if i.kind == kind), None)
    if issue is None:
        return None
    return Verdict(issue.kind, issue.detail, issue.spec, argument=issue.argument)


def tool_named(tools: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    return next((tool for tool in tools if tool.name == name), None)


def good_calls(reply: Evidence) -> list[ToolCall]:
    """The reply's calls to a tool that exists."""
    return [c for c in reply.calls if tool_named(reply.tools, c.name)]


def on_answer(find: Callable[[Evidence], Verdict | None]) -> Callable[[Evidence], Verdict | None]:
    """`find` on a reply that makes no call: a plain answer."""
    return lambda reply: None if reply.calls else find(reply)
