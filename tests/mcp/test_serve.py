"""`parlay mcp serve tools.py`, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_harness import GUARD

from parlay.cli.toolfiles import load_tool_file

TOOLS = '''
import asyncio

from parlay import tool


def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def lookup(key: str) -> dict:
    """A record by key."""
    print("looking up", key)  # stdout carries the protocol: this must not break it
    return {"key": key, "found": {"a": True}[key]}


@tool(timeout=0.3)
async def slow() -> str:
    """Takes too long."""
    await asyncio.sleep(30)
    return "late"
'''


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.py"
    path.write_text(textwrap.dedent(TOOLS))
    return path


async def session_with(tools_file: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "parlay.cli.app", "mcp", "serve", str(tools_file), "--name", "shop"],
    )
    async with Client(params) as client:
        listing = await client.list_tools()
        results = [await client.call_tool(name, args) for name, args in calls]
        return client.server_info, listing.tools, results


def run(tools_file: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    return asyncio.run(asyncio.wait_for(session_with(tools_file, calls), GUARD))


def test_the_sdk_client_lists_the_tools_with_parlays_schemas(tools_file: Path):
    info, listed, _ = run(tools_file, [])
    assert info is not None and info.name == "shop"
    expected = load_tool_file(tools_file)
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (t.name, t.description, t.parameters) for t in expected
    ]


def test_the_sdk_client_calls_a_tool_and_reads_errors(tools_file: Path):
    calls = [
        ("add", {"a": 2, "b": 3}),
        ("lookup", {"key": "a"}),
        ("lookup", {"key": "zz"}),
        ("add", {"a": "two"}),
        ("slow", {}),
        ("nosuch", {}),
    ]
    _, _, (added, found, missing, invalid, slow, unknown) = run(tools_file, calls)
    assert not added.is_error and added.content[0].text == "5"
    assert found.structured_content == {"key": "a", "found": True}
    assert missing.is_error and missing.content[0].text == "KeyError: 'zz'"
    assert invalid.is_error and invalid.content[0].text.startswith(
        "invalid arguments: argument 'a'"
    )
    assert slow.is_error and slow.content[0].text == "tool 'slow' timed out after 0.3 s"
    assert unknown.is_error and unknown.content[0].text.startswith("unknown tool 'nosuch'")
