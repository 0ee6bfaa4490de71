"""Parlay tools served over MCP: `parlay mcp serve tools.py`, or `serve(tools)` in Python.

The server lists each tool with the JSON schema parlay shows a model, and runs a call the
way a session does: arguments validated by the tool's pydantic model, its timeout, a
tool that raises or an unknown name answered as an error result (`isError`), never as a
protocol error, so the client's model reads what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from parlay._version import __version__
from parlay.context import ToolCall
from parlay.mcp.results import to_call_tool_result
from parlay.tools import Tool, Toolbox

Tools = Toolbox | Iterable[Tool | Callable[..., Any]]


def build_server(tools: Tools, *, name: str = "parlay") -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) offering `tools`, for any transport."""
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    listing = [
        types.Tool(name=t.name, description=t.description or None, input_schema=t.parameters)
        for t in box
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = ToolCall(params.name, params.arguments or {})
        return to_call_tool_result(await box.arun(call))

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_async(tools: Tools, *, name: str = "parlay") -> None:
    """Serve `tools` over this process's stdin and stdout until the client hangs up.

    While it runs, what the tools print goes to stderr (stdout carries the protocol)."""
    server = build_server(tools, name=name)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(tools: Tools, *, name: str = "parlay") -> None:
    """`serve_async` from synchronous code: blocks until the client hangs up."""
    anyio.run(lambda: serve_async(tools, name=name))


__all__ = ["build_server", "serve", "serve_async"]
