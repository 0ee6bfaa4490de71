"""Tool search on the wire: deferred tools (`defer_loading`) and the `tool_reference`
blocks that make them shown, read the same way from every protocol.

A client-side search (Claude Code's `ToolSearch`) answers with `tool_reference` blocks
inside a tool result; they become a line of text the model can read and the result's
`references`, from which the shown tools are derived (`parlay.request.shown_tools`).
A search the API is meant to run itself (Anthropic's `tool_search_tool_*` types,
Responses' `tool_search`) parlay cannot run: its deferred tools are shown in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve

from parlay.errors import InvalidRequestError
from parlay.request import ToolSpec
from parlay.wire._check import field

REFERENCE = "tool_reference"


def is_server_search(kind: Any) -> bool:
    """A tool search the provider runs (`tool_search_tool_regex_20251119`, `..._bm25_...`,
    Responses' `tool_search`)."""
    return isinstance(kind, str) and (kind == "tool_search" or kind.startswith("tool_search_tool"))


def deferred(raw: Mapping[str, Any], where: str) -> bool:
    """A tool's `defer_loading` flag, checked."""
    return bool(field(raw, "defer_loading", bool, where=where))


def take_references(content: Any, where: str) -> tuple[Any, tuple[str, ...]]:
    """A tool result's content without its `tool_reference` blocks, and the tools they
    name (in order, once each)."""
    if not isinstance(content, list):
        return content, ()
    kept: list[Any] = []
    names: list[str] = []
    for i, block in enumerate(content):
        if isinstance(block, Mapping) and block.get("type") == REFERENCE:
            name = field(block, "tool_name", str, where=f"{where}[{i}]", required=True)
            if name not in names:
                names.append(name)
        else:
            kept.append(block)
    return kept, tuple(names)


def with_references(text: str, names: Sequence[str]) -> str:
    """The result's text and a line per referenced tool, so that a model reading text
    knows what the search found."""
    lines = [f"Tool {name} is now available." for name in names]
    return "\n".join([text, *lines] if text else lines)


def all_shown(specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools with none deferred: what is offered when nobody here can run the search."""
    return tuple(evolve(s, deferred=False) if s.deferred else s for s in specs)


def reference_blocks(names: Sequence[str]) -> list[dict[str, Any]]:
    """`tool_reference` blocks for an upstream that reads them (Anthropic)."""
    return [{"type": REFERENCE, "tool_name": name} for name in names]


def check_shown(specs: Sequence[ToolSpec], where: str) -> None:
    """At least one tool must be shown: a request whose every tool is deferred gives the
    model nothing to call, not even the search."""
    if specs and all(s.deferred for s in specs):
        raise InvalidRequestError(
            f"`{where}`: every tool has defer_loading; at least one (the search) must not"
        )
