"""A small MCP server written with the SDK's own server API, for the tests and the bench.

`python server_app.py` serves over stdio; `python server_app.py http PORT` over
streamable HTTP on 127.0.0.1:PORT/mcp. Each tool stands for one case the client must
handle: a plain value, structured content, a tool that raises, a slow one, one that
never answers, one that kills the server, a name chat APIs refuse, a huge result
(and, with $PARLAY_TEST_BROKEN_SCHEMA set, a tool whose input schema is invalid).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

app = MCPServer("test-tools")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Forecast(BaseModel):
    city: str
    celsius: float


@app.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's temperature in a city."""
    return Forecast(city=city, celsius=21.5)


@app.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(reason)  # the SDK passes a ToolError's message on; others it hides


@app.tool()
async def sleep(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


_arrived: dict[str, int] = {}
_met: dict[str, asyncio.Event] = {}


@app.tool()
async def meet(key: str, parties: int) -> str:
    """Answers once `parties` calls with this key are all in progress (or after 10 s).

    Calls the client sent one after another would never meet: the first would wait out
    the guard alone, so "met" proves the calls overlapped without timing anything."""
    _arrived[key] = _arrived.get(key, 0) + 1
    event = _met.setdefault(key, asyncio.Event())
    if _arrived[key] >= parties:
        event.set()
    try:
        await asyncio.wait_for(event.wait(), 10)
    except TimeoutError:
        return "alone"
    return "met"


@app.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "never"


@app.tool()
def die() -> str:
    """Ends the server process at once."""
    os._exit(3)


@app.tool()
def pid() -> int:
    """The server's process id (to see whether it still runs)."""
    return os.getpid()


@app.tool(name="text.shout")
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@app.tool()
def big(chars: int) -> str:
    """A text of `chars` characters (a result far larger than a model should read)."""
    return "x" * chars


if os.environ.get("PARLAY_TEST_BROKEN_SCHEMA"):
    # One tool listed with an input schema that is not valid JSON Schema, as a buggy
    # server would list it (the SDK builds valid ones, so it is broken after the fact).
    broken = app._tool_manager.get_tool("pid")
    assert broken is not None
    broken.parameters = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
