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


@pytest.fixture(scope="module")
def module_http_server() -> Iterator[Callable[[], HttpServer]]:
    """One HTTP test server for the tests of a module, started when the first asks for it
    (a second or so each): every test connects a client of its own, and the tests that
    kill their server start their own (`http_server`)."""
    started: list[HttpServer] = []

    def get() -> HttpServer:
        if not started:
            started.append(HttpServer())
        return started[0]

    yield get
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def module_stdio_tools() -> Iterator[list[MCPTools]]:
    """The module's one stdio server with no options (a second or so to start), kept
    running across its tests: those that only call its tools share it."""
    shared: list[MCPTools] = []
    yield shared
    for tools in shared:
        within(GUARD, tools.close)


@pytest.fixture(params=["stdio", "http"])
def transport(
    request: pytest.FixtureRequest,
    module_http_server: Callable[[], HttpServer],
    module_stdio_tools: list[MCPTools],
) -> Iterator[Callable[..., MCPTools]]:
    """Makes `MCPTools` for the test server over each transport, closed after the test.
    Over stdio each is a server process of its own, as stdio makes it, but for a test's
    first with no options: the module's shared one (a test that closes or stops its
    servers passes an option, `include=`, to have its own)."""
    made: list[MCPTools] = []
    shared_given = False

    def make(**options: Any) -> MCPTools:
        nonlocal shared_given
        if request.param == "stdio" and not options and not shared_given:
            shared_given = True
            if not module_stdio_tools:
                module_stdio_tools.append(MCPTools.stdio(SERVER))
            return module_stdio_tools[0]
        if request.param == "stdio":
            tools = MCPTools.stdio(SERVER, **options)
        else:
            tools = MCPTools.http(module_http_server().url, **options)
        made.append(tools)
        return tools

    yield make
    for tools in made:
        within(GUARD, tools.close)
