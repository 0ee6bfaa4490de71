"""Going on from a logged conversation logs only the new turns' tool results: the old ones
were logged with the turns that made them (`-c` once logged them again with every new
prompt, each showing twice in `parlay logs show`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from scripted_parlay import run


def results(log: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(log) as conn:
        return conn.execute(
            "SELECT r.prompt, t.output FROM tool_results t JOIN responses r ON r.id = t.response_id"
        ).fetchall()


def test_continue_does_not_log_the_old_tool_results_again(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    tools = tmp_path / "tools.py"
    tools.write_text('def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n')
    first = run(["prompt", "2+3?", "-m", "tool", "-T", str(tools), "--no-stream"], log)
    assert first.returncode == 0, first.stderr
    done = run(["prompt", "and now?", "-c", "--no-stream"], log)
    assert done.returncode == 0, done.stderr
    assert results(log) == [("2+3?", "5")]
