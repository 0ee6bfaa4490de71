"""What the engine checks in each call the parser hands over, before anyone sees it.

A call is repaired against its tool's schema, then looked at for what the retry policy
judges: an unknown tool, arguments that still do not fit, values copied from the
examples or given by no one (`grounding`), and a call the history already answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from attrs import frozen

from parlay.context import AssistantMessage, Message, ToolCall, ToolResult
from parlay.engine.checks.call_checks import (
    EXAMPLE_VALUE,
    INVALID_ARGUMENTS,
    INVENTED_VALUE,
    REPEATED_CALL,
    UNKNOWN_TOOL,
    issue,
)
from parlay.engine.checks.check import CallIssue, OwnRuleName
from parlay.engine.checks.retry import CallRule
from parlay.engine.contract.grounding import copied_value, invented_value
from parlay.engine.contract.render import Contract
from parlay.engine.contract.repair import repair_call
from parlay.request import ToolSpec


@frozen
class CheckedCall:
    """A call as repaired, what is wrong with it, and what the repair noted."""

    call: ToolCall
    issues: tuple[CallIssue, ...] = ()
    notes: tuple[str, ...] = ()


def check_call(
    call: ToolCall,
    specs: Mapping[str, ToolSpec],
    contract: Contract,
    answered: frozenset[tuple[str, str]],
    *,
    check_values: bool = True,
    own_rules: Sequence[CallRule] = (),
) -> CheckedCall:
    """Repair `call` and list its issues (`answered`: see `answered_calls`); the user's
    own rules (`own_rules`) look at a call whose arguments fit."""
    spec = specs.get(call.name)
    if spec is None:
        return CheckedCall(call, (issue(UNKNOWN_TOOL, call, call.name),))
    repaired = repair_call(call, spec)
    fixed = repaired.call
    notes = tuple(f"{call.name}: {note}" for note in repaired.notes)
    issues: list[CallIssue] = []
    if repaired.error is not None and not contract.tools_from_history:
        issues.append(issue(INVALID_ARGUMENTS, fixed, repaired.error, spec))
    if repaired.error is None and check_values:
        if copied := copied_value(fixed.arguments, contract.example_values):
            key, value = copied
            detail = f"{key}={json.dumps(value)}"
            issues.append(issue(EXAMPLE_VALUE, fixed, detail, spec, key))
        if invented := invented_value(fixed.arguments, spec, contract.grounds):
            key, text = invented
            detail = f"{key}={json.dumps(text)}"
            issues.append(issue(INVENTED_VALUE, fixed, detail, spec, key))
    if call_key(fixed) in answered:
        issues.append(issue(REPEATED_CALL, fixed, call.name, spec))
    if repaired.error is None:
        for rule in own_rules:
            if problem := rule.check(fixed, spec):
                issues.append(CallIssue(fixed, OwnRuleName(rule.name), str(problem), spec))
    return CheckedCall(fixed, tuple(issues), notes)


def call_key(call: ToolCall) -> tuple[str, str]:
    """A call's identity for telling a repeat: its name and its arguments."""
    return call.name, json.dumps(call.arguments, sort_keys=True, default=str)


def answered_calls(messages: Sequence[Message]) -> frozenset[tuple[str, str]]:
    """Calls in the history that already have their result."""
    results = {m.call_id for m in messages if isinstance(m, ToolResult)}
    return frozenset(
        call_key(call)
        for m in messages
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls
        if call.id in results
    )
