"""The message that asks the model for a corrected reply, rendered from the template its
check names (`templates/contract/retry/`, each filling in `contract/retry.j2`; a check of
your own: that one): what was wrong, and what to write instead (stricter from the second
attempt on)."""

from __future__ import annotations

from parlay.context import ToolCall
from parlay.engine.checks.check import OWN_MESSAGE
from parlay.engine.checks.defaults import engine_check
from parlay.engine.checks.rules import RULES
from parlay.engine.contract import pieces
from parlay.engine.contract.examples import example_arguments
from parlay.engine.policy import TurnPolicy
from parlay.request import ToolSpec


def retry_instruction(
    reason: str,
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
    check = engine_check(reason)
    return pieces.render_template(
        options,
        check.message if check is not None else OWN_MESSAGE,
        reason=reason,
        detail=detail,
        argument=argument,
        attempt=attempt,
        names=[t.name for t in tools],
        choice=policy.choice,
        tool=pieces.tool_view(tool) if tool is not None else None,
        skeleton=skeleton,
        own_rule=reason not in RULES,
        may_answer=check is not None and check.traits.may_answer,
    )
