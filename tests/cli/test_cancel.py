"""Ctrl-C during a turn, in a real `parlay` process (scripted model): the turn stops, the
rounds it finished reach the log as a "cancelled" row, and the conversation goes on from
before it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripted_parlay import HERE

from parlay.store import Store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

STALLING_TOOLS = '''\
import asyncio
from pathlib import Path

HERE = Path(__file__).parent


def add(a: int, b: int) -> int:
    """Add two integers."""
    (HERE / "added.txt").write_text(f"{a}+{b}")
    return a + b


async def stall() -> str:
    """Never returns (until cancelled)."""
    (HERE / "stalled.txt").write_text("stalled")
    await asyncio.sleep(3600)
    return "never"
'''


# A sync tool blocked in a call Python cannot interrupt: its thread outlives the turn.
BLOCKING_TOOLS = (
    STALLING_TOOLS.replace("import asyncio", "import time")
    .replace("async def stall", "def stall")
    .replace("await asyncio.sleep(3600)", "time.sleep(3600)")
)


def start(
    args: list[str], tmp_path: Path, lines: str = "", tools_source: str = STALLING_TOOLS
) -> subprocess.Popen[str]:
    """`parlay ARGS` on the stalling script, `lines` its whole standard input."""
    tools = tmp_path / "stalling.py"
    tools.write_text(tools_source)
    env = {**os.environ, "PARLAY_LOG_DB": str(tmp_path / "log.db")}
    process = subprocess.Popen(
        [sys.executable, str(HERE), *args, "-m", "stall", "-T", str(tools), "--no-stream"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # A shell running this in the background ignores SIGINT, and Python only turns
        # SIGINT into KeyboardInterrupt when it starts with the default handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdin is not None
    process.stdin.write(lines)
    process.stdin.close()
    process.stdin = None  # written and closed: communicate() has nothing more to send
    return process


def interrupt_once_stalled(process: subprocess.Popen[str], tmp_path: Path) -> tuple[str, str]:
    deadline = time.monotonic() + 30
    while not (tmp_path / "stalled.txt").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the stalling tool never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("the process was still running 30 s after Ctrl-C") from None


def test_ctrl_c_in_prompt_logs_the_turn_as_cancelled_with_its_calls(tmp_path: Path) -> None:
    process = start(["prompt", "go"], tmp_path)
    _, stderr = interrupt_once_stalled(process, tmp_path)
    assert process.returncode != 0
    assert "Traceback" not in stderr
    [row] = Store(tmp_path / "log.db").responses()
    assert row.finish_reason == "cancelled"
    assert [(c.name, c.arguments) for c in row.calls] == [("add", {"a": 2, "b": 3}), ("stall", {})]
    assert [(r.output, r.error) for r in row.results] == [
        ("5", None),
        ("", "cancelled with the turn"),
    ]


def test_ctrl_c_in_chat_stops_the_turn_and_the_chat_goes_on_without_it(tmp_path: Path) -> None:
    process = start(["chat"], tmp_path, lines="go\nhello\n")
    stdout, stderr = interrupt_once_stalled(process, tmp_path)
    assert process.returncode == 0, stderr
    assert "cancelled" in stderr
    shown = json.loads(stdout.strip().splitlines()[-1])  # the echo model: what it was shown
    assert [content for role, content in shown if role == "user"] == ["hello"]
    rows = Store(tmp_path / "log.db").responses()
    assert sorted(r.finish_reason or "" for r in rows) == ["cancelled", "stop"]


def test_ctrl_c_in_prompt_exits_while_a_sync_tool_is_still_blocked(tmp_path: Path) -> None:
    assert "time.sleep(3600)" in BLOCKING_TOOLS and "async def" not in BLOCKING_TOOLS
    process = start(["prompt", "go"], tmp_path, tools_source=BLOCKING_TOOLS)
    started = time.monotonic()
    _, stderr = interrupt_once_stalled(process, tmp_path)  # fails after 30 s if it hangs
    assert process.returncode != 0
    assert "Traceback" not in stderr
    assert time.monotonic() - started < 25
    [row] = Store(tmp_path / "log.db").responses()
    assert row.finish_reason == "cancelled"
    assert [r.error for r in row.results] == [None, "cancelled with the turn"]
