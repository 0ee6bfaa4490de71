"""A server's faults cost only what they touch: a tool whose listing is invalid MCP is
skipped and the others load; lines on stdout that are not JSON-RPC are one warning,
and the session goes on (raw_server.py sends what the SDK's own server will not)."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest
from mcp_harness import GUARD, HERE, within

from parlay import ToolCall
from parlay.errors import MCPServerError, MCPToolSkippedWarning
from parlay.mcp import MCPTools
from parlay.mcp._listing import sift

RAW = [sys.executable, str(HERE / "raw_server.py")]


def test_one_tool_with_a_bad_schema_is_skipped_and_the_rest_load():
    tools = MCPTools.stdio([*RAW, "bad-schemas"], name="raw")
    try:
        with pytest.warns(MCPToolSkippedWarning) as caught:
            within(GUARD, tools.start)
        said = sorted(str(w.message) for w in caught)
        assert said == [
            "MCP server 'raw': skipped tool 'not_an_object': its listing is not valid MCP: "
            "inputSchema: Input should be a valid dictionary or instance of InputSchema "
            "(got 'a string')",
            "MCP server 'raw': skipped tool 'required_x': its listing is not valid MCP: "
            "inputSchema.required: Input should be a valid list (got 'x')",
            "MCP server 'raw': skipped tool 'typed_five': its listing is not valid MCP: "
            "inputSchema.type: Input should be 'object' (got 5)",
            "MCP server 'raw': skipped tool with no usable name (number 2 of its page): "
            "its listing is not valid MCP: name: Field required",
        ]
        # One tool from each page: the cursor still leads to the second page.
        assert tools.toolbox.names == ["echo", "shout"]
        shout = tools.toolbox.get("shout")
        result = within(GUARD, lambda: shout.invoke(ToolCall("shout", {"text": "hi"})))
        assert (result.error, result.output) == (None, "HI")
    finally:
        within(GUARD, tools.close)


def test_a_tool_with_a_bad_schema_named_in_include_is_an_error_not_a_gap():
    tools = MCPTools.stdio([*RAW, "bad-schemas"], name="raw", include=["echo", "typed_five"])
    with pytest.raises(MCPServerError) as caught:
        within(GUARD, tools.start)
    assert str(caught.value) == (
        "MCP server 'raw': tool 'typed_five': its listing is not valid MCP: "
        "inputSchema.type: Input should be 'object' (got 5)"
    )
    assert not tools.is_running


def test_sifting_a_page_keeps_its_cursor_and_leaves_a_valid_page_as_it_is():
    good = {"name": "ok", "inputSchema": {"type": "object"}}
    page = {"tools": [good, {"name": "bad", "inputSchema": {"type": 5}}], "nextCursor": "2"}
    kept, skipped = sift(page, "2025-11-25")
    assert kept == {"tools": [good], "nextCursor": "2"}
    assert [s.name for s in skipped] == ["bad"]
    valid = {"tools": [good], "nextCursor": "2"}
    assert sift(valid, "2025-11-25") == (valid, [])
    # A page that is wrong as a whole is the SDK's to report, not parlay's to mend.
    assert sift({"tools": "none"}, None) == ({"tools": "none"}, [])


# A client as a user runs one: nothing configures logging, so what the SDK and parlay
# log lands on the terminal (here, the captured stderr).
JUNK_CLIENT = textwrap.dedent(
    """
    import sys
    from parlay import ToolCall
    from parlay.mcp import MCPTools
    tools = MCPTools.stdio(sys.argv[1:], name="chatty")
    try:
        echo = tools.toolbox.get("echo")
        print("echo:" + echo.invoke(ToolCall("echo", {"text": "hi"})).output)
    finally:
        tools.close()
    """
)


def test_junk_on_a_servers_stdout_is_one_warning_not_a_traceback_per_line():
    ran = subprocess.run(
        [sys.executable, "-c", JUNK_CLIENT, *RAW, "junk", "50"],
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "echo:hi\n"
    assert "Traceback" not in ran.stderr
    assert ran.stderr.splitlines() == [
        "MCP server 'chatty' wrote 50 lines to stdout that are not JSON-RPC (ignored; a "
        "server's own output belongs on stderr); the first: 'debug: warming up step 0'"
    ]


def test_the_sdks_parse_errors_outside_parlays_connections_are_still_logged(caplog):
    # parlay quiets the SDK's per-line traceback only in its own connections.
    try:
        raise ValueError("not json")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse JSONRPC message")
    assert [r.getMessage() for r in caplog.records] == ["Failed to parse JSONRPC message"]
