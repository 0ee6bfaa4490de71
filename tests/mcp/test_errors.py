"""Every way an MCP server fails is a clear exception at start or an error result during a
call, and none of them hangs (each test runs under a generous hang guard)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest
from mcp_harness import GUARD, SERVER, HttpServer, free_port, within

from parlay import ScriptedBackend, Session, ToolCall, ToolResult
from parlay.backends.scripted import calls
from parlay.errors import MCPServerError, MCPToolSkippedWarning
from parlay.mcp import MCPTools
from parlay.tool_bounds import DEFAULT_MAX_RESULT_CHARS

Make = Callable[..., MCPTools]


def start(tools: MCPTools) -> MCPTools:
    return within(GUARD, tools.start)


def test_a_command_that_does_not_exist_is_a_clear_error_at_start():
    with pytest.raises(MCPServerError) as caught:
        start(MCPTools.stdio("no-such-mcp-server-command --port 1"))
    assert "MCP server 'no-such-mcp-server-command --port 1' could not be started" in str(
        caught.value
    )
    assert "No such file or directory" in str(caught.value)


def test_a_server_that_exits_at_start_shows_what_it_wrote_on_stderr():
    script = "import sys; sys.stderr.write('config.toml: no such file\\n'); sys.exit(2)"
    with pytest.raises(MCPServerError) as caught:
        start(MCPTools.stdio([sys.executable, "-c", script], name="broken"))
    message = str(caught.value)
    assert message.startswith("MCP server 'broken' could not be started: Connection closed")
    assert message.endswith("its stderr ends with:\nconfig.toml: no such file")


def test_a_server_that_never_answers_hits_the_startup_timeout():
    silent = [sys.executable, "-c", "print('not json-rpc'); import time; time.sleep(600)"]
    tools = MCPTools.stdio(silent, name="silent", startup_timeout=1.0)
    with pytest.raises(MCPServerError, match=r"'silent' did not answer within 1 s of starting"):
        start(tools)
    assert not tools.is_running


def test_an_unreachable_url_is_a_clear_error_at_start():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPServerError, match="could not be started: ConnectError"):
        start(MCPTools.http(url, startup_timeout=GUARD / 2))


def test_a_tool_that_raises_is_an_error_result_the_model_sees(transport: Make):
    backend = ScriptedBackend([calls(("fail", {"reason": "quota exceeded"})), "Sorry."])
    session = Session(backend, tools=transport())
    thunk = within(GUARD, lambda: session.query("x", "go"))
    assert thunk.value == "Sorry."
    shown = next(m for m in backend.requests[1].messages if isinstance(m, ToolResult))
    assert shown.is_error and "quota exceeded" in shown.content


def test_a_tool_the_model_made_up_never_reaches_the_server(transport: Make):
    """The session does not run (nor return) a call to a tool it does not have: the
    turn ends as an answer naming the tool the model wanted (issue 37, item 3)."""
    backend = ScriptedBackend([calls(("ad", {"a": 1})), "ok"])
    session = Session(backend, tools=transport(include=["add", "forecast"]))
    thunk = within(GUARD, lambda: session.query("x", "go"))
    assert thunk.steps == () and thunk.tools == ()
    assert "ad" in thunk.value and thunk.diagnostics.unoffered_tools == ("ad",)


def test_a_call_that_times_out_is_an_error_result_and_the_server_lives_on(transport: Make):
    tools = transport(timeout=0.5)
    backend = ScriptedBackend([calls(("hang", {}), ("add", {"a": 1, "b": 2})), "ok"])
    thunk = within(GUARD, lambda: Session(backend, tools=tools).query("x", "go"))
    hung, added = [m for m in thunk.steps if isinstance(m, ToolResult)]
    assert hung.error == "tool 'hang' timed out after 0.5 s"
    assert added.output == "3"
    again = within(
        GUARD, lambda: asyncio.run(tools.toolbox.arun(ToolCall("add", {"a": 2, "b": 2})))
    )
    assert again.output == "4"


def test_a_stdio_server_that_dies_mid_session_gives_error_results():
    tools = start(MCPTools.stdio(SERVER, name="doomed"))
    try:
        backend = ScriptedBackend(
            [calls(("die", {})), calls(("add", {"a": 1, "b": 1})), "it is gone"]
        )
        thunk = within(GUARD, lambda: Session(backend, tools=tools).query("x", "go"))
        died, after = [m for m in thunk.steps if isinstance(m, ToolResult)]
        assert died.error == "MCP server 'doomed' stopped answering: Connection closed"
        # Said again, whether the connection is still winding down or already gone.
        assert after.error in (
            died.error,
            "MCP server 'doomed' is not running (it stopped answering: Connection closed)",
        )
        assert thunk.value == "it is gone"
    finally:
        within(GUARD, tools.close)


def test_an_http_server_that_dies_mid_session_gives_error_results():
    server = HttpServer()
    tools = start(MCPTools.http(server.url, name="remote"))
    try:
        first = within(
            GUARD, lambda: asyncio.run(tools.toolbox.arun(ToolCall("add", {"a": 1, "b": 1})))
        )
        assert first.output == "2"
        server.stop()
        results: list[Any] = [
            within(
                GUARD, lambda: asyncio.run(tools.toolbox.arun(ToolCall("add", {"a": 1, "b": 1})))
            )
            for _ in range(2)
        ]
        assert all(r.error and r.error.startswith("MCP server 'remote'") for r in results)
    finally:
        within(GUARD, tools.close)


def test_a_tool_with_an_invalid_input_schema_is_skipped_by_name_and_the_rest_load():
    env = {"PARLAY_TEST_BROKEN_SCHEMA": "1"}
    with pytest.warns(MCPToolSkippedWarning, match=r"'broken': skipped tool 'pid': .*no-such-type"):
        tools = start(MCPTools.stdio(SERVER, env=env, name="broken"))
    try:
        assert "pid" not in tools.toolbox
        assert {"add", "forecast", "big"} <= set(tools.toolbox.names)
        added = within(
            GUARD, lambda: tools.toolbox.get("add").invoke(ToolCall("add", {"a": 1, "b": 2}))
        )
        assert added.output == "3"
    finally:
        within(GUARD, tools.close)
    # Asked for by name, the broken tool is an error, not a silent gap.
    with pytest.raises(MCPServerError, match=r"'broken': tool 'pid'.*not valid JSON Schema"):
        start(MCPTools.stdio(SERVER, env=env, name="broken", include=["pid"]))


def test_a_huge_mcp_result_is_cut_with_a_note_the_model_reads(transport: Make):
    backend = ScriptedBackend([calls(("big", {"chars": 2_000_000})), "ok"])
    session = Session(backend, tools=transport())
    within(GUARD, lambda: session.query("x", "go").value)
    shown = next(m for m in backend.requests[1].messages if isinstance(m, ToolResult))
    assert len(shown.output) == DEFAULT_MAX_RESULT_CHARS
    assert shown.output.startswith("xxx")
    assert shown.output.endswith("more characters cut ...]")
    cut = int(shown.output.rsplit("[... ", 1)[1].split()[0])
    assert cut + shown.output.count("x") == 2_000_000  # the note counts what is missing


def test_max_result_chars_none_hands_over_an_mcp_result_whole(transport: Make):
    tools = transport(max_result_chars=None, include=["big"])
    result = within(
        GUARD, lambda: tools.toolbox.get("big").invoke(ToolCall("big", {"chars": 10_000}))
    )
    assert result.output == "x" * 10_000


def test_an_mcp_reply_over_the_message_bound_is_refused_without_reading_it_whole():
    # 50 MB from one tool held the client for two minutes and half a gigabyte before the
    # result could be cut; the relay refuses it as it streams past, and the server
    # goes on serving.
    tools = MCPTools.stdio(SERVER)
    start(tools)
    try:
        big = tools.toolbox.get("big")
        result = within(GUARD, lambda: big.invoke(ToolCall("big", {"chars": 50_000_000})))
        assert result.is_error
        assert "over parlay's limit of 8,388,608 bytes for one message" in (result.error or "")
        add = tools.toolbox.get("add")
        assert within(GUARD, lambda: add.invoke(ToolCall("add", {"a": 1, "b": 2}))).output == "3"
    finally:
        within(GUARD, tools.close)
