"""The prompt contract: the request's messages and tools rendered for a plain-chat model.

Everything the model sees comes from Jinja2 templates under `templates/contract/`
(overridable by copying one into your own folder: `templating.environment(user_dir)`).
Rendering is pure: same request, same options, same messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import field, frozen

from parlay.context import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.contract.examples import (
    EXAMPLE_ANSWERS,
    ask_example,
    chain_example,
    pair_example,
    single_example,
    values_of,
)
from parlay.contract.grounding import UNCHECKED, Grounds, grounds_of
from parlay.contract.state import ToolState, has_tool_activity, tool_state
from parlay.contract.tool_view import tool_view
from parlay.errors import ConfigurationError
from parlay.request import ChatRequest, ToolSpec
from parlay.templating import environment

# What the format instructions write where a call's tool name goes. Models copy it when
# unsure which tool to name (`parlay.contract.forced` reads that as no choice at all).
NAME_PLACEHOLDER = "TOOL_NAME"

FORMATS = ("fenced", "json", "command", "typed")
# Formats whose reply is one JSON object in any case (the others are held to the bare
# shape under a grammar).
OBJECT_FORMATS = ("json", "typed")
# Reply shapes that are one JSON object: the calls of a reply are projected as one.
OBJECT_SHAPES = (*OBJECT_FORMATS, "bare")
DEFAULT_FORMAT = "fenced"
DEFAULT_MAX_RESULT_CHARS = 4000
# How much of the user's request a continuation may restate (a template's choice).
RESTATED_CHARS = 400


def _check_format(_: Any, __: Any, value: str) -> None:
    if value not in FORMATS:
        raise ConfigurationError(f"action_format {value!r} is not one of {', '.join(FORMATS)}")


@frozen
class ContractOptions:
    """How the contract is rendered; every field is a knob benchmarks may vary."""

    action_format: str = field(default=DEFAULT_FORMAT, validator=_check_format)
    few_shot: bool = True
    max_examples: int = 4
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    thought_limit: int = 200
    template_dir: str | None = None
    # A "(Reply with a tool call.)" line appended to the last user message under a forced
    # choice. Off: measured on SmolLM2 (required, constrained, 6 tool questions) it took
    # right calls from 5/6 to 3/6 (the model read the line as text to work on).
    reminder: bool = False
    # With parallel calls allowed, the json and bare shapes show every call in the list
    # form (`{"actions": [...]}`), one call too, and the grammar admits only that form.
    # Opt-in: it did not help. On 15 BFCL tune-half questions asking for several calls,
    # Qwen wrote one entry every time, as it wrote `{"action": ...}` without it (0/15
    # right both ways; bench/bfcl/notes.md, "Several calls").
    listed_calls: bool = False


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


def render_template(options: ContractOptions, name: str, **variables: Any) -> str:
    env = environment(options.template_dir)
    variables.setdefault("name_placeholder", NAME_PLACEHOLDER)
    return env.get_template(name).render(**variables).strip()


def shape_of(options: ContractOptions, constrained: bool) -> str:
    """The template folder replies are shown in.

    Under constrained decoding a grammar holds the reply to one bare JSON object, so the
    contract, the examples and the history show exactly that shape ("bare" for the
    fenced and command formats; the json format without its thought): a model taught
    fences but held to JSON picks the answer branch every time (measured on SmolLM2:
    0/6 calls).
    """
    if constrained and options.action_format not in OBJECT_FORMATS:
        return "bare"
    return options.action_format


LIST_SHAPES = ("json", "bare")


def lists_calls(options: ContractOptions, shape: str, parallel: bool) -> bool:
    """Whether every call is shown in the list form (see `ContractOptions.listed_calls`)."""
    return options.listed_calls and parallel and shape in LIST_SHAPES


def render_call(
    call: ToolCall,
    options: ContractOptions,
    thought: str = "",
    *,
    shape: str | None = None,
    listed: bool = False,
) -> str:
    """One call in the contract's action format (also used to project history);
    `listed`: in the list form (`lists_calls`)."""
    if listed:
        return render_calls([call], options, thought, shape=shape, listed=True)
    folder = shape or options.action_format
    path = f"contract/formats/{folder}/call.j2"
    return render_template(options, path, call=call, thought=thought)


def render_calls(
    calls: Sequence[ToolCall],
    options: ContractOptions,
    thought: str = "",
    *,
    shape: str | None = None,
    listed: bool = False,
) -> str:
    """The calls of one reply in the contract's action format: the one call as it is
    (unless `listed`), several in the format's form for several (json: one
    `{"actions": [...]}` object)."""
    if len(calls) == 1 and not listed:
        return render_call(calls[0], options, thought, shape=shape)
    folder = shape or options.action_format
    path = f"contract/formats/{folder}/calls.j2"
    return render_template(options, path, calls=list(calls), thought=thought).strip()


def render_final(content: str, options: ContractOptions, *, shape: str | None = None) -> str:
    """A plain answer in the reply shape (the json and bare shapes wrap it in `final`)."""
    folder = shape or options.action_format
    return render_template(options, f"contract/formats/{folder}/final.j2", content=content)


def render_results(
    results: Sequence[ToolResult],
    options: ContractOptions,
    *,
    waiting: bool = False,
    show_ids: bool = False,
    request: str = "",
) -> str:
    """The continuation message that wraps tool results and asks for the next action.

    Empty outputs, errors and outputs over `max_result_chars` (cut with a marker) are
    worded the same way every time. `request` is the user's message the results serve,
    given to the last continuation only (the one the model answers now).
    """
    views = []
    for item in results:
        output = item.output or ""
        cut = max(0, len(output) - options.max_result_chars)
        views.append(
            {
                "name": item.name,
                "id": item.call_id,
                "show_id": show_ids,
                "error": item.error,
                "empty": item.error is None and not output.strip(),
                "output": output[: options.max_result_chars] if cut else output,
                "truncated": cut,
            }
        )
    return render_template(
        options,
        "contract/continuation.j2",
        results=views,
        waiting=waiting,
        request=_clipped(request, RESTATED_CHARS),
    )


def _clipped(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    return turns, values_of(shown)


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
) -> list[Message]:
    """Calls back into action text, results into continuation messages; no tool roles."""
    shape = shape_of(options, constrained)
    listed = lists_calls(options, shape, parallel)
    out: list[Message] = []
    pending: list[ToolResult] = []
    asked = ""  # the latest user message: what the results serve

    def flush(waiting: bool = False, request: str = "") -> None:
        if pending:
            names = [r.name for r in pending]
            show_ids = len(set(names)) < len(names)
            text = render_results(
                pending, options, waiting=waiting, show_ids=show_ids, request=request
            )
            out.append(UserMessage(text))
            pending.clear()

    for message in messages:
        if isinstance(message, ToolResult):
            pending.append(message)
            continue
        flush()
        if isinstance(message, UserMessage):
            asked = message.content
        if isinstance(message, AssistantMessage):
            parts = [message.content.strip()] if message.content.strip() else []
            calls = message.tool_calls
            if calls and shape in OBJECT_SHAPES:
                # One JSON object per reply: the text before the calls becomes its thought
                # (dropped under a grammar, which has no room for it).
                thought = "" if constrained else " ".join(parts)[: options.thought_limit]
                text = render_calls(calls, options, thought, shape=shape, listed=listed)
                out.append(AssistantMessage(text))
            elif calls:
                parts.append(render_calls(calls, options, shape=shape))
                out.append(AssistantMessage("\n".join(parts)))
            else:
                out.append(AssistantMessage(render_final(message.content, options, shape=shape)))
        else:
            out.append(message)
    flush(waiting=tool_state(messages) is ToolState.WAITING_FOR_RESULT, request=asked)
    return out


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
        turns, example_values = _few_shot(
            tools, options, shape, constrained, request.parallel_tool_calls
        )
        out.extend(turns)
        # One pass over the conversation for both: it is read whole for each.
        unseen = _unseen(example_values | EXAMPLE_ANSWERS, messages)
        example_answers = frozenset(str(v) for v in unseen & EXAMPLE_ANSWERS)
        example_values = unseen - EXAMPLE_ANSWERS
    parallel = request.parallel_tool_calls
    out.extend(
        project_history(messages[start:], options, constrained=constrained, parallel=parallel)
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
