"""`parlay chat` in a real terminal (tmux): a typed line reaches the model, Up recalls it,
and the history is kept beside the log (the scripted echo model answers)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from scripted_parlay import HERE

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def wait_for(name: str, text: str, bound: float = 30, *, at_end: bool = False) -> str:
    deadline = time.monotonic() + bound
    while True:
        screen = tmux("capture-pane", "-p", "-t", name)
        if screen.rstrip().endswith(text) if at_end else text in screen:
            return screen
        assert time.monotonic() < deadline, f"never saw {text!r} on the screen:\n{screen}"
        time.sleep(0.1)


def test_chat_in_a_terminal_edits_lines_and_recalls_history(tmp_path: Path) -> None:
    name = f"parlay-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "log.db"
    command = f"PARLAY_LOG_DB={shlex.quote(str(log))} {sys.executable} {HERE} chat --no-stream"
    tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", command)
    try:
        wait_for(name, "\n>")  # the prompt (tmux drops its trailing space)
        tmux("send-keys", "-t", name, "helo", "Left", "Left", "l", "Enter")  # edited in place
        wait_for(name, '[["user", "hello"]]')
        tmux("send-keys", "-t", name, "Up")
        # Recalled on the new prompt line, not yet sent (the earlier "> hello" is above).
        wait_for(name, "> hello", at_end=True)
        tmux("send-keys", "-t", name, "C-u", "exit", "Enter")
        # The history file can exist before the line is in it (it is written as the
        # session ends): wait for the line, not for the file.
        history = tmp_path / "chat-history"
        deadline = time.monotonic() + 30
        while not (history.exists() and "hello" in history.read_text()):
            written = history.read_text() if history.exists() else "(no file)"
            assert time.monotonic() < deadline, f"history beside the log: {written!r}"
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, env=os.environ)
