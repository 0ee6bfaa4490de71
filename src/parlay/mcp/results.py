"""An MCP `CallToolResult` as a parlay `ToolResult`, and back.

Text blocks are joined into what the model reads; `structuredContent` is kept as the
result's `value`; `isError` becomes an error result the model sees. Blocks a chat model
cannot read (images, audio, binary resources) are named in the text, not dropped
silently.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mcp import types
from pydantic import BaseModel

from parlay.context import ToolResult
from parlay.tool_text import render_output


def block_text(block: types.ContentBlock) -> str:
    """What a model is shown for one content block."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'})]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}: {block.name}]"
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type} ({block.mime_type}) not shown]"
    return f"[{getattr(block, 'type', 'content')} not shown]"


def to_tool_result(name: str, result: types.CallToolResult) -> ToolResult:
    """The parlay result for an MCP result (call id left empty: the tool fills it in)."""
    text = "\n".join(t for t in (block_text(b) for b in result.content) if t)
    structured = result.structured_content
    if result.is_error:
        return ToolResult("", name, error=text or "the tool reported an error", value=structured)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    return ToolResult("", name, output=text, value=structured if structured is not None else text)


def _as_object(value: Any) -> dict[str, Any] | None:
    """A JSON object for `value` when it is one (a dict, a pydantic model, a dataclass)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if not isinstance(value, dict):
        return None
    try:
        loaded = json.loads(render_output(value))
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def to_call_tool_result(result: ToolResult) -> types.CallToolResult:
    """What an MCP client receives for a parlay result: the text the model would read,
    and the value as structured content when it is a JSON object."""
    if result.error is not None:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.error)], is_error=True
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.output)],
        structured_content=_as_object(result.value),
    )
