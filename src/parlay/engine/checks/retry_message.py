"""The message that asks the model for a corrected reply, rendered from
`templates/contract/retry.j2`: what was wrong, and what to write instead (stricter from
the second attempt on)."""

from __future__ import annotations

from typing import Literal

from parlay.context import ToolCall
from parlay.engine.checks.rules import RULES, OwnRuleName, VerdictReason
from parlay.engine.contract.examples import example_arguments
from parlay.engine.contract.pieces import (
    ContractOptions,
    lists_calls,
    render_calls,
    render_template,
    shape_of,
    tool_view,
)
from parlay.request import ToolChoice, ToolSpec

# What a retry message answers: a verdict, or under tool_choice none a reply without words.
RetryReason = VerdictReason | OwnRuleName | Literal["words_only"]


def retry_instruction(
    reason: RetryReason,
    detail: str,
    attempt: int,
    tools: tuple[ToolSpec, ...],
    choice: ToolChoice,
    options: ContractOptions,
    tool: ToolSpec | None = None,
    *,
    constrained: bool = False,
    argument: str = "",
    parallel: bool = False,
) -> str:
    """The message that asks for a corrected reply; stricter from the second attempt on.

    `argument` names the argument at fault, without its value: a model shown the value
    it copied or invented writes it again."""
    target = tool
    if target is None and choice.mode == "tool":
        target = next((t for t in tools if t.name == choice.name), None)
    if target is None and tools:
        target = tools[0]
    skeleton = _skeleton(target, options, constrained, parallel) if target is not None else ""
    return render_template(
        options,
        "contract/retry.j2",
        reason=reason,
        detail=detail,
        argument=argument,
        attempt=attempt,
        names=[t.name for t in tools],
        choice=choice,
        tool=tool_view(tool) if tool is not None else None,
        skeleton=skeleton,
        own_rule=reason not in RULES,
    )


def _skeleton(target: ToolSpec, options: ContractOptions, constrained: bool, parallel: bool) -> str:
    """A call of `target` in the reply's shape, with placeholders, not example values:
    a model told "in this shape" copies values."""
    placeholders = {key: f"<{key}>" for key in example_arguments(target)}
    shape = shape_of(options, constrained)
    call = ToolCall(target.name, placeholders, "x")
    return render_calls([call], options, shape=shape, listed=lists_calls(options, shape, parallel))
