"""The pieces of the contract's text: its options, and how calls, an answer, tool results
and a tool are written in each format (from the Jinja2 templates under
`templates/contract/`). `parlay.engine.contract.render` puts them together.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, get_args

from attrs import field, frozen

from parlay._text import one_line
from parlay.context import ToolCall, ToolResult
from parlay.errors import ConfigurationError
from parlay.request import ToolSpec
from parlay.templating import environment

# What the format instructions write where a call's tool name goes. Models copy it when
# unsure which tool to name (`parlay.engine.checks.confidence` reads that as no choice at all).
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


# What becomes of an image for a model that reads text only (`contract.images`).
ImageHandling = Literal["placeholder", "refuse"]
IMAGE_HANDLINGS: tuple[ImageHandling, ...] = get_args(ImageHandling)


def as_image_handling(value: str) -> ImageHandling:
    if value not in IMAGE_HANDLINGS:
        raise ConfigurationError(f"images {value!r} is not one of {', '.join(IMAGE_HANDLINGS)}")
    return value


def as_action_format(value: str) -> ActionFormat:
    """`value` as an action format, or a `ConfigurationError` naming the formats."""
    if value not in FORMATS:
        raise ConfigurationError(f"action_format {value!r} is not one of {', '.join(FORMATS)}")
    return value


@frozen
class ContractOptions:
    """How the contract is rendered; every field is a knob benchmarks may vary."""

    action_format: ActionFormat = field(default=DEFAULT_FORMAT, converter=as_action_format)
    few_shot: bool = True
    max_examples: int = 4
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    thought_limit: int = 200
    template_dir: str | None = None
    # The continuation after tool results restates the user's request, so a model that
    # made one call of several sees what is left.
    restate_request: bool = True
    # An image, for a model that reads text only: a placeholder in its place, or a refusal.
    images: ImageHandling = field(default="placeholder", converter=as_image_handling)


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


def render_calls(
    calls: Sequence[ToolCall],
    options: ContractOptions,
    thought: str = "",
    *,
    shape: str,
) -> str:
    """The calls of one reply in `shape`: one call as it is, several in the shape's form
    for several (json: one `{"actions": [...]}` object)."""
    name = "call" if len(calls) == 1 else "calls"
    return render_template(
        options,
        f"contract/formats/{shape}/{name}.j2",
        call=calls[0] if calls else None,
        calls=list(calls),
        thought=thought,
    )


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
    (`may_call` False: for the answer only). Outputs over `max_result_chars` are cut with
    a marker; `request` is the user's message the results serve, restated in the
    continuation the model answers now."""
    limit = options.max_result_chars
    views = [
        {
            "name": item.name,
            "id": item.call_id,
            "show_id": show_ids,
            "error": item.error,
            "empty": item.error is None and not (item.output or "").strip(),
            "output": (item.output or "")[:limit],
            "truncated": max(0, len(item.output or "") - limit),
        }
        for item in results
    ]
    how = {"waiting": waiting, "request": one_line(request, RESTATED_CHARS), "may_call": may_call}
    return render_template(options, "contract/continuation.j2", results=views, **how)


def tool_view(spec: ToolSpec) -> dict[str, Any]:
    """A tool as the templates show it: its name, description and argument summary."""
    return {"name": spec.name, "description": spec.description, "summary": schema_summary(spec)}


def schema_summary(spec: ToolSpec) -> str:
    """`city (string, required): The city; unit (one of "c", "f")`, short, for a prompt."""
    if "properties" not in spec.parameters:
        return ""  # schema unknown (a tool seen only in the history)
    required = set(spec.parameters.get("required") or ())
    parts = []
    for key, sub in (spec.parameters.get("properties") or {}).items():
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
