"""`-c` and `--cid`: a logged conversation goes on, through the real command (subprocesses
on a scripted model; the echo script's reply shows what reached the model)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from scripted_parlay import run


def shown(stdout: str) -> list[list[str]]:
    return json.loads(stdout.strip().splitlines()[-1])


def sessions_and_rows(log: Path) -> tuple[int, int]:
    with sqlite3.connect(log) as conn:
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        rows = conn.execute("SELECT COUNT(DISTINCT session_id) FROM responses").fetchone()[0]
    return sessions, rows


def test_continue_sends_the_logged_conversation_and_logs_into_it(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    first = run(["prompt", "one", "-s", "be brief", "--no-stream"], log)
    assert first.returncode == 0, first.stderr
    done = run(["prompt", "two", "-c", "--no-stream"], log)
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [
        ["system", "be brief"],
        ["user", "one"],
        ["assistant", first.stdout.strip()],
        ["user", "two"],
    ]
    assert sessions_and_rows(log) == (1, 1)


def test_continue_replays_each_rounds_calls_and_results(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    tools = tmp_path / "tools.py"
    tools.write_text('def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n')
    first = run(["prompt", "2+3?", "-m", "tool", "-T", str(tools), "--no-stream"], log)
    assert first.returncode == 0, first.stderr
    done = run(["prompt", "and now?", "-c", "--no-stream"], log)
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [
        ["user", "2+3?"],
        ["assistant", ""],
        ["tool", "5"],
        ["assistant", "The sum is 5."],
        ["user", "and now?"],
    ]


def test_a_turn_stopped_at_the_chain_limit_is_logged_and_continue_goes_on_from_before_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    tools = tmp_path / "tools.py"
    tools.write_text('def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n')
    first = run(["prompt", "one", "--no-stream"], log)
    assert first.returncode == 0, first.stderr
    looping = ["prompt", "2+3?", "-c", "-m", "loop", "-T", str(tools), "--chain-limit", "1"]
    stopped = run(looping, log)
    assert stopped.returncode == 1 and "--chain-limit" in stopped.stderr
    with sqlite3.connect(log) as conn:
        (finish, calls, results) = conn.execute(
            "SELECT finish_reason, (SELECT COUNT(*) FROM tool_calls WHERE response_id = r.id),"
            " (SELECT COUNT(*) FROM tool_results WHERE response_id = r.id)"
            " FROM responses r WHERE prompt = '2+3?'"
        ).fetchone()
    assert (finish, calls, results) == ("error", 2, 1)  # the tool ran once, then the stop
    done = run(["prompt", "two", "-c", "--no-stream"], log)
    assert done.returncode == 0, done.stderr
    assert shown(done.stdout) == [
        ["user", "one"],
        ["assistant", first.stdout.strip()],
        ["user", "two"],
    ]


def test_cid_prefix_picks_an_older_conversation(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    older = run(["prompt", "older", "--json"], log)
    assert older.returncode == 0, older.stderr
    cid = json.loads(older.stdout)["log"]["session_id"]
    assert run(["prompt", "newer", "--no-stream"], log).returncode == 0
    done = run(["prompt", "again", "--cid", cid[:8], "--json"], log)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert json.loads(answer["text"])[0] == ["user", "older"]
    assert answer["log"]["session_id"] == cid


def test_chat_continues_the_latest_conversation(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    assert run(["prompt", "one", "--no-stream"], log).returncode == 0
    done = run(["chat", "-c", "--no-stream"], log, stdin="two\n")
    assert done.returncode == 0, done.stderr
    assert [m[1] for m in shown(done.stdout)][::2] == ["one", "two"]
    assert sessions_and_rows(log) == (1, 1)


def test_continue_with_an_empty_log_says_so(tmp_path: Path) -> None:
    done = run(["prompt", "hi", "-c"], tmp_path / "log.db")
    assert done.returncode != 0
    assert "no conversation in the log" in done.stderr


def test_unknown_cid_says_where_to_look(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    assert run(["prompt", "one"], log).returncode == 0
    done = run(["prompt", "hi", "--cid", "zzzz"], log)
    assert done.returncode != 0
    assert "parlay logs" in done.stderr
