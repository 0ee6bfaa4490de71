"""The prompt contract: the request's messages and tools rendered for a plain-chat model.

Everything the model sees comes from Jinja2 templates under `templates/contract/`
(overridable by copying one into your own folder: `templating.environment(user_dir)`).
Rendering is pure: same request, same options, same messages.
"""

from __future__ import annotations

import json
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
from parlay.errors import ConfigurationError
from parlay.request import ChatRequest, ToolChoice, ToolSpec
from parlay.templating import environment

# What the format instructions write where a call's tool name goes. Models copy it when
# unsure which tool to name (`parlay.contract.forced` reads that as no choice at all).
NAME_PLACEHOLDER = "TOOL_NAME"

FORMATS = ("fenced", "json", "command")
DEFAULT_FORMAT = "fenced"
DEFAULT_MAX_RESULT_CHARS = 4000


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


def _template(options: ContractOptions, name: str, **variables: Any) -> str:
    env = environment(options.template_dir)
    variables.setdefault("name_placeholder", NAME_PLACEHOLDER)
    return env.get_template(name).render(**variables).strip()


def schema_summary(spec: ToolSpec) -> str:
    """`city (string, required): The city; unit (one of "c", "f")` — short, for a prompt."""
    if "properties" not in spec.parameters:
        return ""  # schema unknown (a tool seen only in the history)
    properties = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or ())
    parts = []
    for key, sub in properties.items():
        sub = sub if isinstance(sub, dict) else {}
        if isinstance(sub.get("enum"), list):
            kind = "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in sub["enum"])
        else:
            raw = sub.get("type", "any")
            kind = "/".join(raw) if isinstance(raw, list) else str(raw)
            if kind == "array" and isinstance(sub.get("items"), dict):
                kind = f"array of {sub['items'].get('type', 'any')}"
        flags = kind + (", required" if key in required else "")
        description = str(sub.get("description") or "").strip().split("\n")[0]
        parts.append(f"{key} ({flags})" + (f": {description}" if description else ""))
    return "; ".join(parts) or "none"


def _tool_view(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "summary": schema_summary(spec)}


def shape_of(options: ContractOptions, constrained: bool) -> str:
    """The template folder replies are shown in.

    Under constrained decoding a grammar holds the reply to one bare JSON object, so the
    contract, the examples and the history show exactly that shape ("bare" for the
    fenced and command formats; the json format without its thought): a model taught
    fences but held to JSON picks the answer branch every time (measured on SmolLM2:
    0/6 calls).
    """
    if constrained and options.action_format != "json":
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
    return _template(options, f"contract/formats/{folder}/call.j2", call=call, thought=thought)


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
    return _template(options, path, calls=list(calls), thought=thought).strip()


def render_final(content: str, options: ContractOptions, *, shape: str | None = None) -> str:
    """A plain answer in the reply shape (the json and bare shapes wrap it in `final`)."""
    folder = shape or options.action_format
    return _template(options, f"contract/formats/{folder}/final.j2", content=content)


def render_results(
    results: Sequence[ToolResult],
    options: ContractOptions,
    *,
    waiting: bool = False,
    show_ids: bool = False,
) -> str:
    """The continuation message that wraps tool results and asks for the next action.

    Empty outputs, errors and outputs over `max_result_chars` (cut with a marker) are
    worded the same way every time.
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
    return _template(options, "contract/continuation.j2", results=views, waiting=waiting)


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
    text = _template(
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

    def flush(waiting: bool = False) -> None:
        if pending:
            names = [r.name for r in pending]
            show_ids = len(set(names)) < len(names)
            out.append(
                UserMessage(render_results(pending, options, waiting=waiting, show_ids=show_ids))
            )
            pending.clear()

    for message in messages:
        if isinstance(message, ToolResult):
            pending.append(message)
            continue
        flush()
        if isinstance(message, AssistantMessage):
            parts = [message.content.strip()] if message.content.strip() else []
            calls = message.tool_calls
            if calls and shape in ("json", "bare"):
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
    flush(waiting=tool_state(messages) is ToolState.WAITING_FOR_RESULT)
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
    lead: list[str] = []
    start = 0
    while start < len(messages) and isinstance(messages[start], SystemMessage):
        lead.append(messages[start].content)
        start += 1
    system = _template(
        options,
        "contract/system.j2",
        user_system="\n\n".join(lead).strip(),
        tools=[_tool_view(t) for t in tools],
        shape=shape,
        constrained=constrained,
        choice=request.tool_choice,
        thought_limit=options.thought_limit,
        parallel=request.parallel_tool_calls,
        listed=lists_calls(options, shape, request.parallel_tool_calls),
    )
    out: list[Message] = [SystemMessage(system)]
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
    out.extend(
        project_history(
            messages[start:],
            options,
            constrained=constrained,
            parallel=request.parallel_tool_calls,
        )
    )
    if options.reminder and request.tool_choice.mode != "auto" and isinstance(out[-1], UserMessage):
        reminder = _template(options, "contract/reminder.j2", choice=request.tool_choice)
        if reminder:
            out[-1] = UserMessage(f"{out[-1].content}\n\n{reminder}")
    return Contract(
        tuple(out),
        tools,
        tool_state(messages),
        history,
        from_history,
        example_values,
        example_answers,
        grounds_of(messages),
    )


def retry_instruction(
    reason: str,
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
    from parlay.contract.examples import example_arguments

    target = tool
    if target is None and choice.mode == "tool":
        target = next((t for t in tools if t.name == choice.name), None)
    if target is None and tools:
        target = tools[0]
    skeleton = ""
    if target is not None:
        # Placeholders, not example values: a model told "in this shape" copies values.
        placeholders = {key: f"<{key}>" for key in example_arguments(target)}
        shape = shape_of(options, constrained)
        skeleton = render_call(
            ToolCall(target.name, placeholders, "x"),
            options,
            shape=shape,
            listed=lists_calls(options, shape, parallel),
        )
    return _template(
        options,
        "contract/retry.j2",
        reason=reason,
        detail=detail,
        argument=argument,
        attempt=attempt,
        names=[t.name for t in tools],
        choice=choice,
        tool=_tool_view(tool) if tool is not None else None,
        skeleton=skeleton,
    )
