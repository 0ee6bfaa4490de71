"""MCP servers' tools in a parlay session, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from mcp_harness import GUARD, SERVER, within

from parlay import ScriptedBackend, Session, Toolbox, ToolCall, ToolDefinitionError, ToolResult
from parlay.backends.scripted import calls
from parlay.errors import MCPServerError
from parlay.mcp import MCPTools

Make = Callable[..., MCPTools]


def results_of(thunk: Any) -> list[ToolResult]:
    return [m for m in thunk.steps if isinstance(m, ToolResult)]


def test_a_servers_listing_becomes_tool_specs(snapshot):
    tools = MCPTools.stdio(SERVER)
    try:
        specs = within(GUARD, lambda: tools.toolbox.specs)
        assert [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in specs
        ] == snapshot
    finally:
        tools.close()


def test_a_session_runs_mcp_tools_through_its_loop(transport: Make):
    backend = ScriptedBackend(
        [calls(("add", {"a": 2, "b": 40}), ("forecast", {"city": "Oslo"})), "It is 42."]
    )
    session = Session(backend, tools=transport())
    thunk = within(GUARD, lambda: session.query("2 and 40", "sum?"))
    assert thunk.value == "It is 42."
    added, forecast = results_of(thunk)
    assert (added.output, added.value) == ("42", {"result": 42})
    assert forecast.value == {"city": "Oslo", "celsius": 21.5}
    # The model was shown the server's text, in the order of the calls.
    sent = [m for m in backend.requests[1].messages if isinstance(m, ToolResult)]
    assert [m.content for m in sent] == ["42", forecast.output]


def test_is_error_and_invalid_arguments_are_error_results_the_model_sees(transport: Make):
    box = transport().toolbox
    failed = asyncio.run(box.arun(ToolCall("fail", {"reason": "the disk is full"})))
    assert failed.is_error and "the disk is full" in failed.content
    # Checked against the server's own schema before anything is sent: parlay's wording.
    invalid = asyncio.run(box.arun(ToolCall("add", {"a": "two", "b": 1})))
    assert invalid.error == "invalid arguments: argument 'a': 'two' is not of type 'integer'"


def test_calls_to_one_server_overlap(transport: Make):
    script = calls(*[("meet", {"key": f"k-{uuid.uuid4()}", "parties": 4})] * 4)
    session = Session(ScriptedBackend([script, "ok"]), tools=transport())
    thunk = within(GUARD, lambda: session.query("x", "go"))
    assert [r.output for r in results_of(thunk)] == ["met"] * 4


def test_a_name_chat_apis_refuse_is_made_safe_and_still_calls_the_right_tool(transport: Make):
    box = transport().toolbox
    assert "text_shout" in box and "text.shout" not in box
    shouted = asyncio.run(box.arun(ToolCall("text_shout", {"text": "hi"})))
    assert shouted.output == "HI"


def test_a_prefix_tells_two_servers_apart(transport: Make):
    with pytest.raises(ToolDefinitionError, match=r"two tools are named 'add'.*prefix"):
        Toolbox([*transport(include=["add"]), *transport(include=["add"])])
    both = Toolbox([*transport(include=["add"]), *transport(include=["add"], prefix="b")])
    assert both.names == ["add", "b_add"]
    assert asyncio.run(both.arun(ToolCall("b_add", {"a": 1, "b": 2}))).output == "3"


def test_include_keeps_the_named_tools_and_names_the_missing_ones():
    tools = MCPTools.stdio(SERVER, include=["add", "nosuch"])
    with pytest.raises(MCPServerError, match="has no tool named 'nosuch'; its tools: add, "):
        within(GUARD, tools.start)
    assert not tools.is_running  # the server it started was stopped again
    with MCPTools.stdio(SERVER, include=["forecast"]) as kept:
        assert kept.toolbox.names == ["forecast"]


async def test_async_with_starts_the_server_and_stops_it():
    async with MCPTools.stdio(SERVER, include=["add"]) as tools:
        assert tools.is_running and tools.server_name == "test-tools"
        session = Session(ScriptedBackend([calls(("add", {"a": 1, "b": 1})), "2"]), tools=tools)
        thunk = await asyncio.wait_for(session.aquery("1+1", "sum?"), GUARD)
        assert results_of(thunk)[0].output == "2"
    assert not tools.is_running
    after = await tools.toolbox.arun(ToolCall("add", {"a": 1, "b": 1}))
    assert after.error is not None and "is not running (it was closed)" in after.error


def test_closing_the_session_stops_its_servers(transport: Make):
    first, second = transport(include=["add"]), transport(include=["forecast"])
    session = Session(ScriptedBackend([]), tools=[*first, *second, lambda_free_tool])
    assert first.is_running and second.is_running
    with session:
        pass
    assert not first.is_running and not second.is_running


def lambda_free_tool(x: int) -> int:
    """A plain Python tool beside the MCP ones."""
    return x


def test_the_sync_form_works_from_a_running_event_loop():
    # A notebook cell runs inside an event loop: the blocking form must not deadlock it.
    async def cell() -> str:
        tools = MCPTools.stdio(SERVER, include=["add"])
        session = Session(ScriptedBackend([calls(("add", {"a": 3, "b": 4})), "7"]), tools=tools)
        try:
            return results_of(session.query("x", "y"))[0].output
        finally:
            session.close()

    assert within(GUARD, lambda: asyncio.run(cell())) == "7"


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until_gone(pid: int) -> bool:
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def server_pid(tools: MCPTools) -> int:
    result = within(GUARD, lambda: tools.toolbox.get("pid").invoke(ToolCall("pid", {})))
    return int(result.output)


def test_a_server_nothing_refers_to_any_more_is_stopped():
    tools = MCPTools.stdio(SERVER, include=["pid"])
    pid = server_pid(tools)
    assert not gone(pid)
    del tools
    gc.collect()
    assert wait_until_gone(pid)


def test_the_servers_stop_when_the_program_ends(tmp_path):
    script = (
        "import sys\n"
        "from parlay.mcp import MCPTools\n"
        "from parlay import ToolCall\n"
        f"tools = MCPTools.stdio({SERVER!r}, include=['pid'])\n"
        "print(tools.toolbox.get('pid').invoke(ToolCall('pid', {})).output)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr
    assert wait_until_gone(int(done.stdout.strip()))
