"""Claude Code's tool search and a reasoning model, through `parlay serve` in both modes.

The newest Claude Code (tests/clients/node_newest) offers most of its tools deferred
(`defer_loading`) behind its `ToolSearch` tool; a search's result is a `tool_reference`
block. The scripted upstream searches, then calls the tool it found: no request may be
refused, and the found tool must be among what the model is shown from then on (the
upstream's `tools` in native mode, the engine's contract in prompted mode).

A reasoning upstream opens every reply with `<think>…</think>` and sends
`reasoning_content` beside it: Claude Code's and Codex's answers hold none of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from client_harness import Proxy, check_mode, clean_env, node_client
from client_upstream import Script, Step, Upstream
from test_agent_clis import CODEX_CONFIG, PROMPT, check_ran, shell_script

NEWEST_DIR = Path(__file__).parent / "node_newest"
FOUND = "Tool CronList is now available."  # the search's result, as parlay words it
SEARCH_ANSWER = "There are no scheduled jobs: done-search."
THOUGHT = "secret-reasoning the user must not read as the answer"


def newest_claude() -> Path:
    """The newest Claude Code, installed on first use. Its package wants Node 22 and
    npm 11 skips its postinstall step, so its `install.cjs` is run here by hand (the
    native binary it puts in place runs on Node 20)."""
    binary = NEWEST_DIR / "node_modules" / ".bin" / "claude"
    package = NEWEST_DIR / "node_modules" / "@anthropic-ai" / "claude-code"
    if not binary.exists() or not (package / "bin" / "claude.exe").exists():
        npm, node = shutil.which("npm"), shutil.which("node")
        if npm is None or node is None:
            pytest.skip("npm is not installed: the newest Claude Code cannot be installed")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NEWEST_DIR, check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        subprocess.run(
            [node, "install.cjs"], cwd=package, check=True, capture_output=True, timeout=600
        )
    return binary


def run_claude(claude: Path, proxy: Proxy, work: Path, prompt: str, *allowed: str) -> dict:
    env = {
        **clean_env(work.parent / "home"),
        "ANTHROPIC_BASE_URL": proxy.url,
        "ANTHROPIC_API_KEY": proxy.key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    command = [str(claude), "-p", prompt, "--output-format", "json"]
    if allowed:
        command += ["--allowedTools", ",".join(allowed)]
    done = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result: dict = json.loads(done.stdout)
    assert result.get("is_error") is False, result
    return result


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def shown_names(body: dict) -> str:
    """What the upstream was shown of the tools: their definitions (native) or the
    contract's text (prompted)."""
    return json.dumps(body.get("tools") or body.get("messages", [])[:1])


def test_claude_code_tool_search_loads_the_found_tool_without_a_4xx(
    proxy: Proxy, upstream: Upstream, work: Path
) -> None:
    claude = newest_claude()
    upstream.play(
        Script(
            steps=(
                Step("ToolSearch", {"query": "select:CronList"}, FOUND),
                Step("CronList", {}, "No scheduled jobs."),
            ),
            answer=SEARCH_ANSWER,
        )
    )
    result = run_claude(claude, proxy, work, "List my scheduled jobs.", "CronList")
    assert "done-search" in result["result"]
    asked = [b for b in upstream.requests if "ToolSearch" in json.dumps(b)]
    before = [b for b in asked if FOUND not in json.dumps(b)]
    after = [b for b in asked if FOUND in json.dumps(b)]
    assert before and after, [len(before), len(after)]
    # Claude Code sends CronList (deferred) once it is found, and keeps a deferred
    # placeholder in every request: the model is shown the one, never the other.
    assert all("DeferredToolPlaceholder" not in shown_names(body) for body in asked)
    assert "CronList" in shown_names(after[0])
    check_mode(upstream, proxy)


@pytest.mark.parametrize("version", ["pinned", "newest"])
def test_claude_code_reads_no_reasoning_as_the_answer(
    proxy: Proxy, upstream: Upstream, work: Path, version: str
) -> None:
    claude = node_client("claude") if version == "pinned" else newest_claude()
    script = shell_script("Bash", "command")
    upstream.play(Script(script.steps, script.answer, reasoning=THOUGHT))
    result = run_claude(claude, proxy, work, PROMPT, "Bash")
    assert "done-alpha-archived" in result["result"]
    assert "secret-reasoning" not in result["result"]
    assert "think>" not in result["result"]
    check_ran(work)
    check_mode(upstream, proxy)


def test_codex_reads_no_reasoning_as_the_answer(
    proxy: Proxy, upstream: Upstream, work: Path
) -> None:
    codex = node_client("codex")
    script = shell_script("exec_command", "cmd")
    upstream.play(Script(script.steps, script.answer, reasoning=THOUGHT))
    home = work.parent / "home"
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=proxy.url))
    env = {**clean_env(home), "PARLAY_API_KEY": proxy.key}
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         "--output-last-message", str(work.parent / "last.txt"), PROMPT],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    answer = (work.parent / "last.txt").read_text()
    assert "done-alpha-archived" in answer
    assert "secret-reasoning" not in answer and "think>" not in answer
    check_ran(work)
    check_mode(upstream, proxy)
