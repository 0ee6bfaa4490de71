"""The message that asks the model for a corrected reply, rendered from
`templates/contract/retry.j2`: what was wrong, and what to write instead (stricter from
the second attempt on)."""

from __future__ import annotations

from typing import Literal

from parlay.context import ToolCall
from parlay.engine.checks.rules import RULES, OwnRuleName, VerdictReason
from parlay.engine.contract import pieces
from parlay.engine.contract.examples import example_arguments
from parlay.engine.policy import TurnPolicy
from parlay.request import ToolSpec

# What a retry message answers: a verdict, or under tool_choice none a reply without words.
RetryReason = VerdictReason | OwnRuleName | Literal["words_only"]


def retry_instruction(
    reason: RetryReason,
    detail: str,
    attempt: int,
    tools: tuple[ToolSpec, ...],
    policy: TurnPolicy,
    options: pieces.ContractOptions,
    tool: ToolSpec | None = None,
    *,
    constrained: bool = False,
    argument: str = "",
) -> str:
    """The message that asks for a corrected reply; stricter from the second attempt on.

    `argument` names the argument at fault, without its value: a model shown the value
    it copied or invented writes it again. The call it shows (of `tool`, the named tool
    or the first) has placeholders, not example values: a model told "in this shape"
    copies values."""
    target = tool or policy.named(tools) or (tools[0] if tools else None)
    skeleton = ""
    if target is not None:
        call = ToolCall(target.name, {key: f"<{key}>" for key in example_arguments(target)}, "x")
        shape = pieces.shape_of(options, constrained)
        skeleton = pieces.render_calls([call], options, shape=shape)
    return pieces.render_template(
        options,
        "contract/retry.j2",
        reason=reason,
        detail=detail,
        argument=argument,
        attempt=attempt,
        names=[t.name for t in tools],
        choice=policy.choice,
        tool=pieces.tool_view(tool) if tool is not None else None,
        skeleton=skeleton,
        own_rule=reason not in RULES,
    )
