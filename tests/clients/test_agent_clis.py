"""The agent command lines people use, unmodified, through `parlay serve` in both modes:
Claude Code (`claude -p`), with its default tool set; nothing changed but the base URL,
the key, and its telemetry switched off. Each runs two shell commands with its own shell
tool (they write files) and must print the answer.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from client_harness import Proxy, check_mode, node_client
from client_upstream import Script, Step, Upstream

FIRST = "printf 'done-%s\\n' alpha > alpha.txt && cat alpha.txt"
SECOND = "mkdir -p archive && mv alpha.txt archive/ && printf 'done-%s-archived\\n' alpha"
PROMPT = f"Run `{FIRST}` with your shell tool, then run `{SECOND}`, and tell me what they printed."
ANSWER = "The commands printed done-alpha and then done-alpha-archived."


def shell_script(tool: str, argument: str) -> Script:
    return Script(
        steps=(
            Step(tool, {argument: FIRST}, "done-alpha"),
            Step(tool, {argument: SECOND}, "done-alpha-archived"),
        ),
        answer=ANSWER,
    )


def check_ran(work: Path) -> None:
    assert (work / "archive" / "alpha.txt").read_text() == "done-alpha\n"
    assert not (work / "alpha.txt").exists()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def clean_env(home: Path) -> dict[str, str]:
    """The machine's environment without the keys and endpoints of whoever runs the
    tests, with a home of its own (no user config)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    return {**keep, "HOME": str(home)}


def test_claude_code(proxy: Proxy, upstream: Upstream, work: Path) -> None:
    claude = node_client("claude")
    upstream.play(shell_script("Bash", "command"))
    env = {
        **clean_env(work.parent / "home"),
        "ANTHROPIC_BASE_URL": proxy.url,
        "ANTHROPIC_API_KEY": proxy.key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    done = subprocess.run(
        [str(claude), "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result.get("is_error") is False, result
    assert "done-alpha-archived" in result["result"]
    check_ran(work)
    check_mode(upstream, proxy)
