"""The import contract in pyproject.toml ([tool.importlinter]) holds: imports run one way
(values, tools, backends and engine, session, server and CLI) and no package's modules
import each other in a cycle. `lint-imports` says which import broke it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_imports_keep_their_layers_and_have_no_cycle() -> None:
    # This checkout's source, whatever copy of parlay the environment has installed.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]
    done = subprocess.run(
        [*run, "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
