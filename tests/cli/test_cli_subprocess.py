"""The real `parlay` command in a subprocess, on the embedded model (SmolLM2 + prompted
tool calling). Assertions are about the protocol (calls, results, rows), not wording."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parlay.store import Store

pytestmark = pytest.mark.model

MARKER_TOOLS = '''\
from pathlib import Path

MARKER = Path(__file__).with_name("ran.txt")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    MARKER.write_text(f"{a}+{b}")
    return a + b
'''


def parlay_command() -> list[str]:
    found = shutil.which("parlay", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "parlay.cli.app"]


def run(args: list[str], log_db: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PARLAY_LOG_DB": str(log_db)}
    env.pop("PARLAY_OPENAI_BASE_URL", None)  # the embedded model, whatever the shell says
    return subprocess.run(
        [*parlay_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture
def marker_tools(tmp_path: Path) -> Path:
    path = tmp_path / "calc.py"
    path.write_text(MARKER_TOOLS)
    return path


def test_tool_call_on_the_embedded_model_with_debug_json_and_log(
    tmp_path: Path, marker_tools: Path
) -> None:
    log_db = tmp_path / "log.db"
    done = run(
        [
            "prompt",
            "What is 12 plus 30?",
            "-T",
            str(marker_tools),
            "--tool-choice",
            "add",
            "--tools-debug",
            "--json",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            "--chain-limit",
            "1",
        ],
        log_db,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    call = payload["tool_calls"][0]
    assert call["name"] == "add"
    args = call["arguments"]
    # The tool really ran in the subprocess, with the arguments the model gave.
    assert (marker_tools.parent / "ran.txt").read_text() == f"{args['a']}+{args['b']}"
    assert call["output"] == str(args["a"] + args["b"]) and call["error"] is None
    # --tools-debug: each call and result on stderr, nothing of it on stdout.
    assert f"tool call add({json.dumps(args)})" in done.stderr
    assert f"tool result add: {call['output']}" in done.stderr
    # The log has one row for the prompt: its call, the result, the answer.
    store = Store(log_db)
    (asked,) = store.responses(tool="add")
    assert asked.id == payload["log"]["response_id"] and asked.text == payload["text"]
    assert asked.prompt == "What is 12 plus 30?"
    assert [(c.call_id, c.name, c.arguments) for c in asked.calls] == [(call["id"], "add", args)]
    assert [(r.call_id, r.output) for r in asked.results] == [(call["id"], call["output"])]
    assert store.count("responses") == 1
    assert store.sessions()[0].source == "cli"


def test_approval_answered_no_on_the_embedded_model(tmp_path: Path, marker_tools: Path) -> None:
    done = run(
        [
            "prompt",
            "Add 2 and 3.",
            "-T",
            str(marker_tools),
            "--tool-choice",
            "add",
            "--tools-approve",
            "--json",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            "--chain-limit",
            "1",
        ],
        tmp_path / "log.db",
        stdin="no\n",
    )
    assert done.returncode == 0, done.stderr
    assert "Run tool add(" in done.stderr
    payload = json.loads(done.stdout)
    (call,) = payload["tool_calls"]
    assert "declined" in call["error"]
    assert not (marker_tools.parent / "ran.txt").exists()  # cancelled: never ran
    (asked,) = Store(tmp_path / "log.db").responses(tool="add")
    assert "declined" in (asked.results[0].error or "")
