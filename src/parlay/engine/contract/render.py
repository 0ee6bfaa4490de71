"""The prompt contract: the request's messages and tools rendered for a plain-chat model.

Everything the model sees comes from Jinja2 templates under `templates/contract/`
(overridable by copying one into your own folder: `templating.environment(user_dir)`).
Rendering is pure: same request, same options, same messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.engine.contract import examples
from parlay.engine.contract.grounding import UNCHECKED, Grounds, grounds_of
from parlay.engine.contract.pieces import (
    OBJECT_SHAPES,
    ContractOptions,
    lists_calls,
    render_calls,
    render_final,
    render_results,
    render_template,
    shape_of,
    tool_view,
)
from parlay.engine.contract.state import ToolState, has_tool_activity, tool_state
from parlay.request import ChatRequest, ToolSpec

# The line that begins each turn of the rendered few-shot examples.
_TURN = re.compile(r"^\s*<<(user|assistant)>>\s*$", re.MULTILINE)


@frozen
class Contract:
    """A request rendered for the inner model, and what rendering found out."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    state: ToolState
    tool_history: bool
    tools_from_history: bool
    # Values shown only in the few-shot calls, never in the conversation itself: a call
    # carrying one copied it from an example.
    example_values: frozenset[str | int | float] = frozenset()
    # Made-up results the examples show (`{"status": "done"}`), likewise unseen: a plain
    # answer quoting one claims a result no tool returned.
    example_answers: frozenset[str] = frozenset()
    # The words of the conversation, for telling a value the user gave from an invented one.
    grounds: Grounds = UNCHECKED


def _examples(
    request: ChatRequest,
    tools: tuple[ToolSpec, ...],
    options: ContractOptions,
    shape: str,
    constrained: bool,
) -> tuple[list[Message], frozenset[str | int | float], frozenset[str]]:
    """The example turns, and the values and answers they show that the conversation does
    not (a reply carrying one copied it). With parallel calls allowed, one example reply
    makes two calls; under a grammar the calls carry no thought (it has no room for one)."""
    singles = [examples.single_example(t, i) for i, t in enumerate(tools[: options.max_examples])]
    chain = examples.chain_example(tools)
    pair = examples.pair_example(tools) if request.parallel_tool_calls else None
    listed = lists_calls(options, shape, request.parallel_tool_calls)
    shown = [example.call for example in singles] + list(pair.calls if pair else ())
    shown.extend(call for call in (chain.first, chain.second) if call is not None)

    def show(calls: Sequence[ToolCall], thought: str = "") -> str:
        thought = "" if constrained else thought
        return render_calls(calls, options, thought, shape=shape, listed=listed)

    text = render_template(
        options,
        "contract/fewshot.j2",
        singles=singles,
        ask=examples.ask_example(tools),
        chain=chain,
        pair=pair,
        render_call=lambda call, thought="": show([call], thought),
        render_calls=show,
        render_final=lambda content: render_final(content, options, shape=shape),
        render_results=lambda results: render_results(results, options),
    )
    turns = _TURN.split(text)
    messages: list[Message] = [
        UserMessage(body.strip()) if role == "user" else AssistantMessage(body.strip())
        for role, body in zip(turns[1::2], turns[2::2], strict=True)
    ]
    # One pass over the conversation for both: it is read whole for each.
    unseen = _unseen(examples.values_of(shown) | examples.EXAMPLE_ANSWERS, request.messages)
    answers = frozenset(str(v) for v in unseen & examples.EXAMPLE_ANSWERS)
    return messages, unseen - examples.EXAMPLE_ANSWERS, answers


def _unseen(
    values: frozenset[str | int | float], messages: Sequence[Message]
) -> frozenset[str | int | float]:
    """The values that the conversation itself never mentions."""
    said = "\n".join(
        m.content if not isinstance(m, ToolResult) else (m.output or "")
        for m in messages
        if not isinstance(m, AssistantMessage)
    ).casefold()
    return frozenset(v for v in values if str(v).strip() and str(v).casefold() not in said)


def _tools_from_history(messages: Sequence[Message]) -> tuple[ToolSpec, ...]:
    """Later turns may not repeat the tool list: keep tool mode on with the names used."""
    names: dict[str, None] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                names.setdefault(call.name)
        elif isinstance(message, ToolResult):
            names.setdefault(message.name)
    return tuple(
        ToolSpec(name, "(used earlier in this conversation)", {"type": "object"}) for name in names
    )


def project_history(
    messages: Sequence[Message],
    options: ContractOptions,
    *,
    constrained: bool = False,
    parallel: bool = False,
    may_call: bool = True,
) -> list[Message]:
    """Calls back into action text, results into continuation messages; no tool roles.
    `may_call`: whether the reply to the last continuation may call (not under
    tool_choice "none"), which its last line asks for accordingly."""
    shape = shape_of(options, constrained)
    listed = lists_calls(options, shape, parallel)
    out: list[Message] = []
    pending: list[ToolResult] = []
    asked = ""  # the latest user message: what the results serve
    for message in messages:
        if isinstance(message, ToolResult):
            pending.append(message)
            continue
        out.extend(_continuation(pending, options))
        pending = []
        if isinstance(message, UserMessage):
            asked = message.content
        if isinstance(message, AssistantMessage):
            out.append(_projected_reply(message, options, shape, constrained, listed))
        else:
            out.append(message)
    restated = asked if options.restate_request else ""
    waiting = tool_state(messages) is ToolState.WAITING_FOR_RESULT
    return out + _continuation(
        pending, options, waiting=waiting, request=restated, may_call=may_call
    )


def _continuation(results: list[ToolResult], options: ContractOptions, **how: Any) -> list[Message]:
    """The message wrapping `results` (none without results); ids shown where names repeat."""
    names = [r.name for r in results]
    show_ids = len(set(names)) < len(names)
    return (
        [UserMessage(render_results(results, options, show_ids=show_ids, **how))] if results else []
    )


def _projected_reply(
    message: AssistantMessage, options: ContractOptions, shape: str, constrained: bool, listed: bool
) -> AssistantMessage:
    """An assistant reply as the model would have written it in the contract's shape."""
    parts = [message.content.strip()] if message.content.strip() else []
    calls = message.tool_calls
    if calls and shape in OBJECT_SHAPES:
        # One JSON object per reply: the text before the calls becomes its thought
        # (dropped under a grammar, which has no room for it).
        thought = "" if constrained else " ".join(parts)[: options.thought_limit]
        return AssistantMessage(render_calls(calls, options, thought, shape=shape, listed=listed))
    if calls:
        parts.append(render_calls(calls, options, shape=shape))
        return AssistantMessage("\n".join(parts))
    return AssistantMessage(render_final(message.content, options, shape=shape))


def render_contract(
    request: ChatRequest, options: ContractOptions, *, constrained: bool = False
) -> Contract:
    """The messages the inner (plain-chat) model is sent for `request`; `constrained`: the
    reply will be held to `constrain.action_schema`, so all is shown in its shape."""
    shape = shape_of(options, constrained)
    messages = request.messages
    history = has_tool_activity(messages)
    tools = request.tools
    from_history = not tools and history
    if from_history:
        tools = _tools_from_history(messages)
    system, start = _system_message(request, options, tools, shape, constrained)
    may_call = request.tool_choice.mode != "none"
    turns, values, answers = (
        _examples(request, tools, options, shape, constrained)
        if options.few_shot and tools and not from_history and may_call
        else ([], frozenset(), frozenset())
    )
    out = [system, *turns]
    parallel = request.parallel_tool_calls
    out.extend(
        project_history(
            messages[start:], options, constrained=constrained, parallel=parallel, may_call=may_call
        )
    )
    if options.reminder and request.tool_choice.mode != "auto" and isinstance(out[-1], UserMessage):
        reminder = render_template(options, "contract/reminder.j2", choice=request.tool_choice)
        if reminder:
            out[-1] = UserMessage(f"{out[-1].content}\n\n{reminder}")
    state = tool_state(messages)
    return Contract(
        tuple(out), tools, state, history, from_history, values, answers, grounds_of(messages)
    )


def _system_message(
    request: ChatRequest,
    options: ContractOptions,
    tools: tuple[ToolSpec, ...],
    shape: str,
    constrained: bool,
) -> tuple[SystemMessage, int]:
    """The contract's system message (the caller's own system text first), and where the
    conversation starts after the caller's system messages."""
    messages = request.messages
    start = next(
        (i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages)
    )
    system = render_template(
        options,
        "contract/system.j2",
        user_system="\n\n".join(m.content for m in messages[:start]).strip(),
        tools=[tool_view(t) for t in tools],
        shape=shape,
        constrained=constrained,
        choice=request.tool_choice,
        thought_limit=options.thought_limit,
        parallel=request.parallel_tool_calls,
        listed=lists_calls(options, shape, request.parallel_tool_calls),
    )
    return SystemMessage(system), start
