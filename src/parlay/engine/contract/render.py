"""The prompt contract: the request's messages and tools rendered for a plain-chat model.

Everything the model sees comes from Jinja2 templates under `templates/contract/`
(overridable by copying one into your own folder: `templating.environment(user_dir)`).
Rendering is pure: same request, same options, same messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from parlay.engine.contract.examples import (
    EXAMPLE_ANSWERS,
    ask_example,
    chain_example,
    pair_example,
    single_example,
    values_of,
)
from parlay.engine.contract.grounding import UNCHECKED, Grounds, grounds_of
from parlay.engine.contract.pieces import (
    DEFAULT_FORMAT,
    DEFAULT_MAX_RESULT_CHARS,
    FORMATS,
    LIST_SHAPES,
    NAME_PLACEHOLDER,
    OBJECT_FORMATS,
    OBJECT_SHAPES,
    ContractOptions,
    lists_calls,
    render_call,
    render_calls,
    render_final,
    render_results,
    render_template,
    shape_of,
)
from parlay.engine.contract.state import ToolState, has_tool_activity, tool_state
from parlay.engine.contract.tool_view import tool_view
from parlay.request import ChatRequest, ToolSpec

# The pieces are parlay.engine.contract.pieces's; importing them from here still works.
__all__ = [
    "DEFAULT_FORMAT",
    "DEFAULT_MAX_RESULT_CHARS",
    "FORMATS",
    "LIST_SHAPES",
    "NAME_PLACEHOLDER",
    "OBJECT_FORMATS",
    "OBJECT_SHAPES",
    "Contract",
    "ContractOptions",
    "lists_calls",
    "project_history",
    "render_call",
    "render_calls",
    "render_contract",
    "render_final",
    "render_results",
    "render_template",
    "shape_of",
]


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


def _few_shot(
    tools: tuple[ToolSpec, ...],
    options: ContractOptions,
    shape: str,
    constrained: bool,
    parallel: bool,
) -> tuple[list[Message], frozenset[str | int | float]]:
    """The example turns, and the values a real call should not copy (`values_of`).
    With parallel calls allowed, one example reply makes two calls."""
    singles = [single_example(spec, i) for i, spec in enumerate(tools[: options.max_examples])]
    chain = chain_example(tools)
    pair = pair_example(tools) if parallel else None
    listed = lists_calls(options, shape, parallel)
    shown = [example.call for example in singles]
    if pair is not None:
        shown.extend(pair.calls)
    if chain is not None:
        shown.extend(call for call in (chain.first, chain.second) if call is not None)
    text = render_template(
        options,
        "contract/fewshot.j2",
        singles=singles,
        ask=ask_example(tools),
        chain=chain,
        pair=pair,
        render_call=lambda call, thought="": render_call(
            call, options, "" if constrained else thought, shape=shape, listed=listed
        ),
        render_calls=lambda calls, thought="": render_calls(
            calls, options, "" if constrained else thought, shape=shape, listed=listed
        ),
        render_final=lambda content: render_final(content, options, shape=shape),
        render_results=lambda results: render_results(results, options),
    )
    return _turns(text), values_of(shown)


def _turns(text: str) -> list[Message]:
    """The chat turns of rendered examples, each begun by a `<<user>>` or `<<assistant>>` line."""
    turns: list[Message] = []
    role: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if role is not None:
            body = "\n".join(lines).strip()
            turns.append(UserMessage(body) if role == "user" else AssistantMessage(body))

    for line in text.split("\n"):
        marker = line.strip()
        if marker in ("<<user>>", "<<assistant>>"):
            flush()
            role = marker[2:-2]
            lines = []
        else:
            lines.append(line)
    flush()
    return turns


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
    out.extend(
        _continuation(pending, options, waiting=waiting, request=restated, may_call=may_call)
    )
    return out


def _continuation(
    results: list[ToolResult],
    options: ContractOptions,
    *,
    waiting: bool = False,
    request: str = "",
    may_call: bool = True,
) -> list[Message]:
    """The message wrapping `results` (none without results); ids shown where names repeat."""
    if not results:
        return []
    names = [r.name for r in results]
    show_ids = len(set(names)) < len(names)
    text = render_results(
        results, options, waiting=waiting, show_ids=show_ids, request=request, may_call=may_call
    )
    return [UserMessage(text)]


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
    """The messages the inner (plain-chat) model is sent for `request`.

    `constrained`: the reply will be held to `constrain.action_schema`, so everything is
    shown in that shape (see `shape_of`).
    """
    shape = shape_of(options, constrained)
    messages = request.messages
    history = has_tool_activity(messages)
    tools = request.tools
    from_history = False
    if not tools and history:
        tools, from_history = _tools_from_history(messages), True
    system, start = _system_message(request, options, tools, shape, constrained)
    out: list[Message] = [system]
    example_values: frozenset[str | int | float] = frozenset()
    example_answers: frozenset[str] = frozenset()
    if options.few_shot and tools and not from_history and request.tool_choice.mode != "none":
        turns, example_values, example_answers = _examples(
            request, tools, options, shape, constrained
        )
        out.extend(turns)
    parallel = request.parallel_tool_calls
    may_call = request.tool_choice.mode != "none"
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
    grounds = grounds_of(messages)
    return Contract(
        tuple(out), tools, state, history, from_history, example_values, example_answers, grounds
    )


def _examples(
    request: ChatRequest,
    tools: tuple[ToolSpec, ...],
    options: ContractOptions,
    shape: str,
    constrained: bool,
) -> tuple[list[Message], frozenset[str | int | float], frozenset[str]]:
    """The example turns, and the values and answers they show that the conversation
    does not (a reply carrying one copied it)."""
    turns, values = _few_shot(tools, options, shape, constrained, request.parallel_tool_calls)
    # One pass over the conversation for both: it is read whole for each.
    unseen = _unseen(values | EXAMPLE_ANSWERS, request.messages)
    answers = frozenset(str(v) for v in unseen & EXAMPLE_ANSWERS)
    return turns, unseen - EXAMPLE_ANSWERS, answers


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
    start = 0
    while start < len(messages) and isinstance(messages[start], SystemMessage):
        start += 1
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
