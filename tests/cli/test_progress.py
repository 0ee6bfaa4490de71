"""While the model loads or thinks, a terminal shows a status line on stderr; a pipe, a
file or `--json` get nothing but the answer (a session waited 9-60 s on a silent
`parlay prompt`). The terminal is a real one (tmux), the model a scripted slow one."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from scripted_parlay import HERE, run

from parlay.backends.local import LocalBackend
from parlay.cli.progress import _unloaded_model
from parlay.engine.backend import PromptedBackend

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
WAITING = "waiting for the model's reply"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


@contextmanager
def terminal(tmp_path: Path, args: str, delay: float = 4) -> Iterator[str]:
    """`parlay ARGS` in a 120x30 tmux terminal; the pane stays after it exits."""
    name = f"parlay-{uuid.uuid4().hex[:8]}"
    env = f"PARLAY_LOG_DB={shlex.quote(str(tmp_path / 'log.db'))} SCRIPTED_DELAY={delay}"
    command = f"{env} {sys.executable} {HERE} {args}; echo EXITED; sleep 60"
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "30", command)
    try:
        yield name
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, env=os.environ)


def screens_until_exit(name: str, bound: float = 30) -> list[str]:
    """Every screen seen, 10 a second, until the command has exited (or `bound` s)."""
    seen: list[str] = []
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        seen.append(tmux("capture-pane", "-p", "-t", name))
        if "EXITED" in seen[-1]:
            return seen
        time.sleep(0.1)
    pytest.fail(f"never exited:\n{seen[-1]}")


@needs_tmux
def test_a_terminal_shows_a_status_while_the_model_thinks_then_only_the_answer(
    tmp_path: Path,
) -> None:
    with terminal(tmp_path, "prompt hi -m slow") as name:
        screens = screens_until_exit(name)
    waiting = [s for s in screens if WAITING in s]
    assert waiting, "no status line while the model thought"
    assert any(f"{WAITING}… 2 s" in s for s in waiting), "the seconds waited do not count up"
    final = screens[-1]
    assert '[["user", "hi"]]' in final
    assert WAITING not in final  # erased once the answer came


@needs_tmux
def test_json_on_a_terminal_shows_no_status(tmp_path: Path) -> None:
    with terminal(tmp_path, "prompt hi -m slow --json", delay=2) as name:
        screens = screens_until_exit(name)
    assert '"text": "[[\\"user\\", \\"hi\\"]]"' in screens[-1]
    assert not any(WAITING in s for s in screens)


@needs_tmux
@pytest.mark.parametrize("command", ["prompt go", "chat"])
def test_a_tool_line_never_lands_in_the_status_line(
    tmp_path: Path, tools_file: Path, command: str
) -> None:
    # Seen: "⠦ waiting for the model's reply… 14 stool result add: 579". The tools run
    # on another thread than the spinner's, and five rounds give the race five chances.
    args = f"{command} -m slowloop -T {tools_file} --tools-debug --chain-limit 5"
    with terminal(tmp_path, args, delay=0.6) as name:
        if command == "chat":
            wait_for_screen(name, "\n>")
            tmux("send-keys", "-t", name, "go", "Enter")
            wait_for_screen(name, "raise --chain-limit")
            tmux("send-keys", "-t", name, "exit", "Enter")
        screens = screens_until_exit(name)
    for screen in screens:
        for line in screen.splitlines():
            assert not (WAITING in line and "tool " in line), f"in the status line:\n{screen}"
    tool_lines = [line for line in screens[-1].splitlines() if "tool result" in line]
    assert len(tool_lines) == 5, screens[-1]
    assert all(line.startswith("tool result add: 5") for line in tool_lines), screens[-1]
    assert WAITING not in screens[-1]


def wait_for_screen(name: str, text: str, bound: float = 30) -> None:
    deadline = time.monotonic() + bound
    while text not in tmux("capture-pane", "-p", "-t", name):
        assert time.monotonic() < deadline, f"never saw {text!r}"
        time.sleep(0.1)


def test_a_pipe_gets_the_answer_and_no_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_DELAY", "1.5")
    done = run(["prompt", "hi", "-m", "slow"], tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '[["user", "hi"]]\n'
    assert done.stderr == ""


def test_the_status_names_the_embedded_model_until_it_is_loaded(tmp_path: Path) -> None:
    model = tmp_path / "tiny-model.gguf"  # never loaded: the backend only names it
    embedded = PromptedBackend(LocalBackend(model))
    assert _unloaded_model(embedded) == "tiny-model.gguf"
    assert _unloaded_model(PromptedBackend(PromptedBackend(LocalBackend(model)))) is not None
    assert _unloaded_model(object()) is None
