"""The prompt contract: the request's messages and tools rendered for a plain-chat model.

Everything the model sees comes from Jinja2 templates under `templates/contract/`
(overridable by copying one into your own folder: `templating.environment(user_dir)`).
Rendering is pure: same request, same options, same messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import takewhile
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
from parlay.engine.contract import examples, pieces
from parlay.engine.contract.grounding import Grounds
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.state import ToolState, has_tool_activity, tool_state
from parlay.engine.policy import TurnPolicy
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
    example_values: frozenset[str | int | float]
    # Made-up results the examples show (`{"status": "done"}`), likewise unseen: a plain
    # answer quoting one claims a result no tool returned.
    example_answers: frozenset[str]
    # The words of the conversation, for telling a value the user gave from an invented one.
    grounds: Grounds


@frozen
class _Shape:
    """How one request's replies are written: calls, answers, results."""

    options: ContractOptions
    shape: str
    constrained: bool

    def calls(self, calls: Sequence[ToolCall], thought: str = "") -> str:
        # Under a grammar a call carries no thought: the grammar has no room for one.
        thought = "" if self.constrained else thought
        return pieces.render_calls(calls, self.options, thought, shape=self.shape)

    def final(self, content: str) -> str:
        name = f"contract/formats/{self.shape}/final.j2"
        return pieces.render_template(self.options, name, content=content)

    def results(self, results: list[ToolResult], **how: Any) -> list[Message]:
        """The message wrapping `results` (none without results); ids where names repeat."""
        names = [r.name for r in results]
        show_ids = len(set(names)) < len(names)
        text = pieces.render_results(results, self.options, show_ids=show_ids, **how)
        return [UserMessage(text)] if results else []


def _shape(options: ContractOptions, constrained: bool) -> _Shape:
    shape = pieces.shape_of(options, constrained)
    return _Shape(options, shape, constrained)


def _examples(
    request: ChatRequest, tools: tuple[ToolSpec, ...], shown: _Shape
) -> tuple[list[Message], frozenset[str | int | float], frozenset[str]]:
    """The example turns, and the values and answers they show that the conversation does
    not (a reply carrying one copied it). With parallel calls allowed, one example reply
    makes two calls."""
    options = shown.options
    singles = [examples.single_example(t, i) for i, t in enumerate(tools[: options.max_examples])]
    chain = examples.chain_example(tools)
    pair = examples.pair_example(tools) if request.parallel_tool_calls else None
    text = pieces.render_template(
        options,
        "contract/fewshot.j2",
        singles=singles,
        ask=examples.ask_example(tools),
        chain=chain,
        pair=pair,
        render_call=lambda call, thought="": shown.calls([call], thought),
        render_calls=shown.calls,
        render_final=shown.final,
        render_results=lambda results: pieces.render_results(results, options),
    )
    turns = _TURN.split(text)
    calls = [e.call for e in singles] + list(pair.calls if pair else ()) + [chain.first]
    values = examples.values_of(calls + ([chain.second] if chain.second else []))
    # One pass over the conversation for both: it is read whole for each.
    unseen = _unseen(values | examples.EXAMPLE_ANSWERS, request.messages)
    messages: list[Message] = [
        UserMessage(body.strip()) if role == "user" else AssistantMessage(body.strip())
        for role, body in zip(turns[1::2], turns[2::2], strict=True)
    ]
    answers = frozenset(str(v) for v in unseen & examples.EXAMPLE_ANSWERS)
    return messages, unseen - examples.EXAMPLE_ANSWERS, answers


def _unseen(
    values: frozenset[str | int | float], messages: Sequence[Message]
) -> frozenset[str | int | float]:
    """The values that the conversation, the assistant's replies aside, never mentions."""
    said = "\n".join(
        (m.output or "") if isinstance(m, ToolResult) else m.content
        for m in messages
        if not isinstance(m, AssistantMessage)
    ).casefold()
    return frozenset(v for v in values if str(v).strip() and str(v).casefold() not in said)


def _tools_from_history(messages: Sequence[Message]) -> tuple[ToolSpec, ...]:
    """Later turns may not repeat the tool list: keep tool mode on with the names used."""
    names: dict[str, None] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            names.update(dict.fromkeys(call.name for call in message.tool_calls))
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
    may_call: bool = True,
) -> list[Message]:
    """Calls back into action text, results into continuation messages; no tool roles.
    `may_call`: whether the reply to the last continuation may call (not under
    tool_choice "none"), which its last line asks for accordingly."""
    shown = _shape(options, constrained)
    out: list[Message] = []
    pending: list[ToolResult] = []
    asked = ""  # the latest user message: what the results serve
    for message in messages:
        if isinstance(message, ToolResult):
            pending.append(message)
            continue
        out += shown.results(pending)
        pending = []
        if isinstance(message, UserMessage):
            asked = message.content
        out.append(_projected(message, shown) if isinstance(message, AssistantMessage) else message)
    restated = asked if options.restate_request else ""
    waiting = tool_state(messages) is ToolState.WAITING_FOR_RESULT
    return out + shown.results(pending, waiting=waiting, request=restated, may_call=may_call)


def _projected(message: AssistantMessage, shown: _Shape) -> AssistantMessage:
    """An assistant reply as the model would have written it in the contract's shape: in
    a JSON shape, one object whose thought is the text before the calls."""
    text = message.content.strip()
    if not message.tool_calls:
        return AssistantMessage(shown.final(message.content))
    if shown.shape in pieces.OBJECT_SHAPES:
        return AssistantMessage(
            shown.calls(message.tool_calls, text[: shown.options.thought_limit])
        )
    calls = shown.calls(message.tool_calls)
    return AssistantMessage(f"{text}\n{calls}" if text else calls)


def render_contract(
    request: ChatRequest, options: ContractOptions, *, constrained: bool = False
) -> Contract:
    """The messages the inner (plain-chat) model is sent for `request`; `constrained`: the
    reply will be held to `constrain.action_schema`, so all is shown in its shape."""
    messages = request.messages
    history = has_tool_activity(messages)
    from_history = not request.tools and history
    # Deferred tools stay out of the prompt until a tool result references them.
    tools = _tools_from_history(messages) if from_history else request.shown_tools()
    shown = _shape(options, constrained)
    system = tuple(takewhile(lambda m: isinstance(m, SystemMessage), messages))
    out: list[Message] = [_system_message(request, tools, shown, system)]
    may_call = TurnPolicy.of(request).may_call
    values: frozenset[str | int | float] = frozenset()
    answers: frozenset[str] = frozenset()
    if options.few_shot and tools and not from_history and may_call:
        turns, values, answers = _examples(request, tools, shown)
        out += turns
    out += project_history(
        messages[len(system) :], options, constrained=constrained, may_call=may_call
    )
    state = tool_state(messages)
    return Contract(
        tuple(out), tools, state, history, from_history, values, answers, Grounds(messages)
    )


def _system_message(
    request: ChatRequest, tools: tuple[ToolSpec, ...], shown: _Shape, system: Sequence[Message]
) -> SystemMessage:
    """The contract's system message, the caller's own `system` messages first."""
    text = pieces.render_template(
        shown.options,
        "contract/system.j2",
        user_system="\n\n".join(m.content for m in system).strip(),
        tools=[pieces.tool_view(t) for t in tools],
        shape=shown.shape,
        constrained=shown.constrained,
        choice=TurnPolicy.of(request).choice,
        thought_limit=shown.options.thought_limit,
        parallel=request.parallel_tool_calls,
    )
    return SystemMessage(text)
