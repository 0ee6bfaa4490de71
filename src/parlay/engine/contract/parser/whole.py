"""Whole-text parsing: one call for a complete reply."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from parlay.engine.contract.parser.results import ParseResult
from parlay.engine.contract.parser.stream import ActionStreamParser


def parse(text: str, tool_names: Collection[str] = (), **options: Any) -> ParseResult:
    """Parse a whole reply: the same as feeding it in one piece and finishing."""
    parser = ActionStreamParser(tool_names, **options)
    parser.feed(text)
    parser.finish()
    return parser.result()
