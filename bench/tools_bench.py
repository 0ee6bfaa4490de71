"""Tool calls side by side, and what an MCP call costs against calling the function directly.

python bench/tools_bench.py

1. Wall time of one `query` turn whose model round asks for 1, 4 or 8 calls of a tool that
   sleeps 0.5 s (a scripted backend answers at once, so the tools are all there is), with
   the calls run side by side (the default) and one after another (`parallel_tools=False`),
   for an async tool and a sync one (run in worker threads).
2. One call of `add(a, b)`: the plain function, through a parlay `Toolbox`, and through
   `MCPTools` to an MCP server over stdio (an SDK server, and the same function served by
   `parlay mcp serve`) and over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _table import markdown_table, write_result

from parlay import ScriptedBackend, Session, Toolbox, ToolCall
from parlay.backends.scripted import calls
from parlay.mcp import MCPTools

SLEEP = 0.5
WIDTHS = (1, 4, 8)
REPEATS = 3
CALLS = 300
SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "server_app.py"
ADD_FILE = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


async def sleep_async(i: int) -> int:
    await asyncio.sleep(SLEEP)
    return i


def sleep_sync(i: int) -> int:
    time.sleep(SLEEP)
    return i


def turn_seconds(tool: Callable[..., object], width: int, parallel: bool) -> float:
    name = tool.__name__  # type: ignore[attr-defined]
    times = []
    for _ in range(REPEATS):
        script = [calls(*[(name, {"i": i}) for i in range(width)]), "done"]
        session = Session(ScriptedBackend(script), tools=[tool], parallel_tools=parallel)
        started = time.perf_counter()
        assert session.query("x", "go").value == "done"
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def concurrency_table() -> str:
    rows = []
    for tool in (sleep_async, sleep_sync):
        kind = "async" if tool is sleep_async else "sync (threads)"
        for width in WIDTHS:
            together = turn_seconds(tool, width, parallel=True)
            apart = turn_seconds(tool, width, parallel=False)
            rows.append(
                [kind, width, f"{together:.3f} s", f"{apart:.3f} s", f"{apart / together:.1f}x"]
            )
    headers = ["tool", "calls in the round", "side by side", "one after another", "speed-up"]
    return markdown_table(headers, rows)


async def per_call(run: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Median and 90th percentile of one call, in µs, after a few warm-up calls."""
    for _ in range(10):
        await run()
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.9)] * 1e6


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def box_call(box: Toolbox, name: str = "add") -> None:
    result = await box.arun(ToolCall(name, {"a": 2, "b": 3}))
    assert result.output == "5", result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the HTTP MCP server did not start")


def overhead_table() -> str:
    async def plain() -> None:
        assert add(2, 3) == 5

    local = Toolbox([add])
    http_process, url = start_http_server()
    with tempfile.TemporaryDirectory() as tmp:
        tools_file = Path(tmp) / "tools.py"
        tools_file.write_text(ADD_FILE)
        served = [sys.executable, "-m", "parlay.cli.app", "mcp", "serve", str(tools_file)]
        servers = {
            "MCP over stdio (SDK server)": MCPTools.stdio([sys.executable, str(SERVER)]),
            "MCP over stdio (`parlay mcp serve`)": MCPTools.stdio(served),
            "MCP over streamable HTTP (SDK server)": MCPTools.http(url),
        }
        try:
            cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("the function itself", plain),
                ("parlay Toolbox (validated, in a worker thread)", lambda: box_call(local)),
            ]
            for label, tools in servers.items():
                box = Toolbox(tools.start())
                cases.append((label, lambda box=box: box_call(box)))  # type: ignore[misc]
            rows = []
            for label, run in cases:
                median, p90 = asyncio.run(per_call(run))
                rows.append([label, f"{median:,.1f} µs", f"{p90:,.1f} µs"])
        finally:
            for tools in servers.values():
                tools.close()
            http_process.kill()
            http_process.wait()
    return markdown_table(["one call of add(2, 3)", "median", "p90"], rows)


def main() -> None:
    concurrency = concurrency_table()
    print(concurrency, end="\n\n")
    overhead = overhead_table()
    print(overhead)
    path = write_result(
        "tools",
        "Tool calls: side by side, and the cost of an MCP call",
        [
            (
                f"One turn, N calls of a tool sleeping {SLEEP} s (median of {REPEATS})",
                "A scripted backend answers at once, so the turn is the tools' time. Side by "
                "side the turn takes one sleep whatever N; one after another, N sleeps.\n\n"
                + concurrency,
            ),
            (
                f"One call, median and p90 of {CALLS} in a row",
                "Each call from the caller's own event loop (`asyncio.run`), arguments "
                "checked against the tool's schema. An MCP call crosses to parlay's portal "
                "loop, where the connection lives, then to the server process and back; "
                "the SDK server and `parlay mcp serve` run the same `add`. Two shared cores: "
                "other work on the machine moves these numbers.\n\n" + overhead,
            ),
        ],
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
