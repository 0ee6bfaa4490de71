"""The pieces of the contract's text: its options, and how one call, one answer and one
set of tool results are written in each format (from the Jinja2 templates under
`templates/contract/`). `parlay.engine.contract.render` puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from attrs import field, frozen

from parlay._text import one_line
from parlay.context import ToolCall, ToolResult
from parlay.errors import ConfigurationError
from parlay.templating import environment

# What the format instructions write where a call's tool name goes. Models copy it when
# unsure which tool to name (`parlay.engine.checks.forced` reads that as no choice at all).
NAME_PLACEHOLDER = "TOOL_NAME"

# The shapes a reply takes (see `PromptedBackend`): one folder each in
# templates/contract/formats/.
ActionFormat = Literal["fenced", "json", "typed"]
FORMATS: tuple[ActionFormat, ...] = get_args(ActionFormat)
# Formats whose reply is one JSON object in any case (the others are held to the bare
# shape under a grammar).
OBJECT_FORMATS: tuple[ActionFormat, ...] = ("json", "typed")
# Reply shapes that are one JSON object: the calls of a reply are projected as one.
OBJECT_SHAPES = (*OBJECT_FORMATS, "bare")
DEFAULT_FORMAT: ActionFormat = "fenced"
DEFAULT_MAX_RESULT_CHARS = 4000
# How much of the user's request a continuation may restate (a template's choice).
RESTATED_CHARS = 400


def as_action_format(value: str) -> ActionFormat:
    """`value` as an action format, or a `ConfigurationError` naming the formats."""
    for known in FORMATS:
        if value == known:
            return known
    raise ConfigurationError(f"action_format {value!r} is not one of {', '.join(FORMATS)}")


@frozen
class ContractOptions:
    """How the contract is rendered; every field is a knob benchmarks may vary."""

    action_format: ActionFormat = field(default=DEFAULT_FORMAT, converter=as_action_format)
    few_shot: bool = True
    max_examples: int = 4
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    thought_limit: int = 200
    template_dir: str | None = None
    # A "(Reply with a tool call.)" line after the last user message under a forced
    # choice (off: a small model reads it as text to work on).
    reminder: bool = False
    # With parallel calls allowed, the json and bare shapes show every call in the list
    # form (`{"actions": [...]}`), one call too, and the grammar admits only that form.
    listed_calls: bool = False
    # The continuation after tool results restates the user's request, so a model that
    # made one call of several sees what is left.
    restate_request: bool = True


def render_template(options: ContractOptions, name: str, **variables: Any) -> str:
    env = environment(options.template_dir)
    variables.setdefault("name_placeholder", NAME_PLACEHOLDER)
    return env.get_template(name).render(**variables).strip()


def shape_of(options: ContractOptions, constrained: bool) -> str:
    """The template folder replies are shown in: under a grammar, the bare JSON shape it
    holds replies to (a model taught fences but held to JSON never calls)."""

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
    may_call: bool = True,
) -> str:
    """The continuation message that wraps tool results and asks for the next action
    (`may_call` False: for the answer only, under tool_choice "none").

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
        request=one_line(request, RESTATED_CHARS),
        may_call=may_call,
    )
