"""Fixtures: the test MCP server (server_app.py, written with the SDK) over stdio and HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp_harness import GUARD, SERVER, HttpServer, within

from parlay.mcp import MCPTools


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    yield server
    server.stop()


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> Iterator[Callable[..., MCPTools]]:
    """Makes `MCPTools` for the test server over each transport (closed after the test)."""
    made: list[MCPTools] = []
    server: HttpServer | None = None

    def make(**options: Any) -> MCPTools:
        nonlocal server
        if request.param == "stdio":
            tools = MCPTools.stdio(SERVER, **options)
        else:
            server = server or HttpServer()
            tools = MCPTools.http(server.url, **options)
        made.append(tools)
        return tools

    yield make
    for tools in made:
        within(GUARD, tools.close)
    if server is not None:
        server.stop()
