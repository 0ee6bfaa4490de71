"""The checks of the calls a reply writes: one that cannot be read, names no tool, has
arguments that do not fit, carries a value the conversation did not give, or repeats a
call the history answered. `checked_calls.check_call` finds their issues in each call."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from attrs import evolve

from parlay.context import ToolCall
from parlay.engine.checks.check import CallIssue, EngineCheck, Evidence, Traits, Verdict
from parlay.engine.checks.check import first_issue as _first
from parlay.engine.contract.parser.results import ProblemKind
from parlay.request import ToolSpec

UNREADABLE_PROBLEMS: tuple[ProblemKind, ...] = ("no_tool_name", "unreadable_arguments")
_MADE_UP = Traits(taught=True, made_up_value=True, doubtful=True, may_answer=True)


def _unreadable(reply: Evidence) -> Verdict | None:
    unreadable = [p.detail for p in reply.problems if p.kind in UNREADABLE_PROBLEMS]
    return Verdict(UNREADABLE.name, "; ".join(unreadable)) if unreadable else None


def _repeated_call(reply: Evidence) -> Verdict | None:
    """Every call asks again for a result the history already holds."""
    names = ", ".join(i.call.name for i in repeats(reply.issues))
    return Verdict(REPEATED_CALL.name, names) if only_repeats(reply.calls, reply.issues) else None


def _invented_value(reply: Evidence) -> Verdict | None:
    """Under a forced choice the user asked for a call; under `auto` a made-up value most
    often means the request was not for this tool at all."""
    return _first(reply, INVENTED_VALUE.name) if reply.policy.model_decides else None


UNKNOWN_TOOL: EngineCheck = EngineCheck(
    "unknown_tool",
    lambda reply: _first(reply, UNKNOWN_TOOL.name),
    "a call names a tool that does not exist",
    "contract/retry/unknown_tool.j2",
    Traits(may_answer=True),
)
INVALID_ARGUMENTS: EngineCheck = EngineCheck(
    "invalid_arguments",
    lambda reply: _first(reply, INVALID_ARGUMENTS.name),
    "a call's arguments do not fit its tool's schema, even repaired",
    "contract/retry/invalid_arguments.j2",
)
REPEATED_CALL = EngineCheck(
    "repeated_call",
    _repeated_call,
    "every call of the reply repeats one the history already answered",
    "contract/retry/repeated_call.j2",
    Traits(repeats=True),
)
UNREADABLE = EngineCheck(
    "unreadable",
    _unreadable,
    "an action was written but cannot be read",
    "contract/retry/unreadable.j2",
)
EXAMPLE_VALUE: EngineCheck = EngineCheck(
    "example_value",
    lambda reply: _first(reply, EXAMPLE_VALUE.name),
    "an argument copies a value only the few-shot examples show",
    "contract/retry/example_value.j2",
    _MADE_UP,
)
INVENTED_VALUE = EngineCheck(
    "invented_value",
    _invented_value,
    "under auto, a required value no one in the conversation gave",
    "contract/retry/invented_value.j2",
    evolve(_MADE_UP, earned=True),
)


def issue(
    check: EngineCheck,
    call: ToolCall,
    detail: str,
    spec: ToolSpec | None = None,
    argument: str = "",
) -> CallIssue:
    """What `check` finds wrong with `call` (its verdict's reason is the check's name)."""
    return CallIssue(call, check.name, detail, spec, argument)


def repeats(issues: Sequence[CallIssue]) -> list[CallIssue]:
    """The issues of calls repeating one the history answered."""
    return [i for i in issues if i.kind == REPEATED_CALL.name]


def repeated_ids(issues: Sequence[CallIssue]) -> set[str]:
    return {i.call.id for i in repeats(issues)}


def repeated_names(issues: Sequence[CallIssue]) -> set[str]:
    return {i.call.name for i in repeats(issues)}


def only_repeats(calls: Collection[ToolCall], issues: Sequence[CallIssue]) -> bool:
    """Whether the reply has calls and every one repeats a call the history answered."""
    return bool(calls) and len(repeats(issues)) == len(calls)
