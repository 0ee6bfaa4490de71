"""The agent clients of bench/agents.py, each run as its users run it, and the three small
real tasks they are given.

Claude Code (the version the client suite pins, and the newest on npm), Codex CLI and
opencode, pointed at a base URL with nothing else changed but the key and telemetry.
The newest Claude Code and opencode are installed from npm into a cache folder on first
use; the pinned clients come from tests/clients/node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from attrs import frozen

ROOT = Path(__file__).resolve().parents[1]
PINNED = ROOT / "tests" / "clients" / "node"
CACHE = Path(os.environ.get("PARLAY_BENCH_NODE", Path.home() / ".cache" / "parlay-bench-node"))
KEY = "sk-parlay-bench"


@frozen
class Task:
    """A small real task: files laid out before, a prompt, and a check of what it did
    (on disk and in the answer) that returns why it failed, or '' when it is done."""

    name: str
    prompt: str
    files: dict[str, str]
    check: Callable[[Path, str], str]


def _wrote(work: Path, answer: str) -> str:
    target = work / "greeting.txt"
    if not target.is_file():
        return "greeting.txt was not written"
    text = target.read_text(errors="replace").strip()
    return "" if text == "hello from parlay" else f"greeting.txt holds {text[:60]!r}"


def _answered(token: str) -> Callable[[Path, str], str]:
    def check(work: Path, answer: str) -> str:
        return "" if token in answer else f"the answer lacks {token!r}"

    return check


TASKS = (
    Task(
        "write a file",
        "Create a file named greeting.txt that contains exactly this text: hello from parlay",
        {},
        _wrote,
    ),
    Task(
        "read a file",
        "Read the file notes.txt and tell me the vault code written in it.",
        {"notes.txt": "Meeting notes.\nThe vault code is 8142-kestrel.\nBring snacks.\n"},
        _answered("8142-kestrel"),
    ),
    Task(
        "run a command",
        "Run the shell command `sh stamp.sh` and tell me exactly what it printed.",
        {"stamp.sh": "#!/bin/sh\necho quartz-7719\n"},
        _answered("quartz-7719"),
    ),
)


@frozen
class Run:
    returncode: int | None  # None: timed out
    answer: str
    log: str


@frozen
class Client:
    name: str
    version: Callable[[], str]
    run: Callable[[str, str, Path, Path, float], Run]  # url, prompt, work, home, timeout


def _execute(command: list[str], work: Path, env: dict[str, str], timeout: float) -> Run:
    # $PWD too: opencode takes its folder from it, not from the process's own, and wrote
    # the task's file into the folder the benchmark was started from.
    env = {**env, "PWD": str(work)}
    try:
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return Run(None, out, "timed out")
    return Run(done.returncode, done.stdout, done.stderr[-3000:])


def _env(home: Path, **extra: str) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "PARLAY_", "CLAUDE"))
    }
    return {**keep, "HOME": str(home), **extra}


def _npm_install(folder: Path, package: str) -> Path:
    """`package` installed into `folder` (once), with Claude Code's postinstall run by
    hand: npm 11 skips it, and the native binary it places is what runs."""
    modules = folder / "node_modules"
    if not modules.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"private": true}\n')
        npm = shutil.which("npm") or "npm"
        subprocess.run([npm, "install", "--no-audit", "--no-fund", package], cwd=folder,
                       check=True, capture_output=True, timeout=900)  # fmt: skip
        installer = modules / "@anthropic-ai" / "claude-code" / "install.cjs"
        if installer.is_file():
            subprocess.run(["node", str(installer)], cwd=installer.parent, check=False,
                           capture_output=True, timeout=300)  # fmt: skip
    return modules / ".bin"


def _package_version(bin_folder: Path, package: str) -> str:
    manifest = bin_folder.parent / package / "package.json"
    return str(json.loads(manifest.read_text())["version"]) if manifest.is_file() else "?"


def _claude(bin_folder: Callable[[], Path]) -> Callable[[str, str, Path, Path, float], Run]:
    def run(url: str, prompt: str, work: Path, home: Path, timeout: float) -> Run:
        # A slow model's first reply can take more than Claude Code's 5 minutes without an
        # event (pings do not count); docs/clients.md says to raise it, as here, to its most.
        env = _env(home, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY=KEY, DISABLE_TELEMETRY="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   CLAUDE_STREAM_IDLE_TIMEOUT_MS="1800000")  # fmt: skip
        command = [str(bin_folder() / "claude"), "-p", prompt, "--output-format", "json",
                   "--allowedTools", "Bash,Read,Write,Edit,Glob,Grep"]  # fmt: skip
        done = _execute(command, work, env, timeout)
        try:
            answer = str(json.loads(done.answer).get("result", ""))
        except (json.JSONDecodeError, AttributeError):
            answer = done.answer
        return Run(done.returncode, answer, done.log or done.answer[-2000:])

    return run


CODEX_CONFIG = """model = "parlay"
model_provider = "parlay"

[model_providers.parlay]
name = "parlay"
base_url = "{url}/v1"
env_key = "PARLAY_BENCH_KEY"
wire_api = "responses"
"""


def _codex(url: str, prompt: str, work: Path, home: Path, timeout: float) -> Run:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=url))
    command = [str(PINNED / "node_modules" / ".bin" / "codex"), "exec", "--skip-git-repo-check",
               "--dangerously-bypass-approvals-and-sandbox", prompt]  # fmt: skip
    return _execute(command, work, _env(home, PARLAY_BENCH_KEY=KEY), timeout)


def _opencode(url: str, prompt: str, work: Path, home: Path, timeout: float) -> Run:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "parlay",
        "options": {"baseURL": f"{url}/v1", "apiKey": KEY},
        "models": {"parlay": {"name": "parlay"}},
    }
    config = {"provider": {"parlay": provider}, "model": "parlay/parlay", "autoupdate": False}
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps(config))
    binary = _opencode_bin() / "opencode"
    command = [str(binary), "run", "--model", "parlay/parlay", prompt]
    return _execute(command, work, _env(home, OPENCODE_DISABLE_AUTOUPDATE="1"), timeout)


def _newest_claude() -> Path:
    return _npm_install(CACHE / "claude-newest", "@anthropic-ai/claude-code@latest")


def _pinned() -> Path:
    return PINNED / "node_modules" / ".bin"


def _opencode_bin() -> Path:
    return _npm_install(CACHE / "opencode", "opencode-ai@latest")


def _version(bin_folder: Callable[[], Path], package: str) -> Callable[[], str]:
    return lambda: _package_version(bin_folder(), package)


CLAUDE = "@anthropic-ai/claude-code"
CLIENTS = (
    Client("claude-code (pinned)", _version(_pinned, CLAUDE), _claude(_pinned)),
    Client("claude-code (newest)", _version(_newest_claude, CLAUDE), _claude(_newest_claude)),
    Client("codex", _version(_pinned, "@openai/codex"), _codex),
    Client("opencode", _version(_opencode_bin, "opencode-ai"), _opencode),
)
