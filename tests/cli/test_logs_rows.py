"""`parlay logs` shows each call's result once and one model name per row, the engine
beside it (a session found a continued conversation's result listed twice, and model
cells that named the model on some rows and the engine's backend on others)."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_parlay import run

from parlay.store import LoggedResponse, Store


def _rows(log: Path) -> list[dict]:
    listed = run(["logs", "--json"], log)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def test_a_continued_conversation_lists_each_calls_result_once(
    tmp_path: Path, tools_file: Path
) -> None:
    log = tmp_path / "log.db"
    first = run(["prompt", "2+3?", "-m", "tool", "-T", str(tools_file), "--no-stream"], log)
    assert first.returncode == 0, first.stderr
    # -c shows the model the earlier call and result again: they are not logged again.
    again = run(["prompt", "and now?", "-c", "-m", "tool", "-T", str(tools_file)], log)
    assert again.returncode == 0, again.stderr

    rows = _rows(log)
    assert [len(r["tool_results"]) for r in rows] == [0, 1]  # newest first
    (call,) = rows[1]["tool_calls"]
    assert [r["call_id"] for r in rows[1]["tool_results"]] == [call["call_id"]]
    assert Store(log).count("tool_results") == 1


def test_a_log_that_already_holds_a_result_twice_lists_it_once(tmp_path: Path) -> None:
    from parlay.store import LoggedCall, LoggedResult

    log = tmp_path / "log.db"
    store = Store(log)
    store.add_session("s")
    result = LoggedResult("call_1", "add", "5")
    store.add_response(
        LoggedResponse("s", "5", calls=(LoggedCall("call_1", "add", {}),), results=(result,))
    )
    with store._connection() as conn:  # as logs written before the fix hold it
        conn.execute(
            "INSERT INTO tool_results (response_id, call_id, name, output) "
            "VALUES (1, 'call_1', 'add', '5')"
        )
    assert [r["call_id"] for r in _rows(log)[0]["tool_results"]] == ["call_1"]


def test_a_row_without_a_reported_model_names_the_model_and_the_engine_apart(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    store = Store(log)
    store.add_session("s")
    backend = "prompted:local:SmolLM2-135M-Instruct-Q8_0.gguf"
    # An answer in the engine's own words reports no model; a native turn reports one.
    store.add_response(LoggedResponse("s", "a", prompt="p1", backend=backend, model=None))
    store.add_response(
        LoggedResponse("s", "b", prompt="p2", backend="openai:gpt-x@http://h/v1", model="gpt-x")
    )

    rows = _rows(log)
    assert [(r["model"], r["engine"]) for r in rows] == [
        ("gpt-x", "native"),
        ("SmolLM2-135M-Instruct-Q8_0.gguf", "prompted"),
    ]
    table = run(["logs"], log, timeout=60)
    assert "prompted:" not in table.stdout and "SmolLM2" in table.stdout
    shown = run(["logs", "show", "1"], log)
    assert "model: SmolLM2-135M-Instruct-Q8_0.gguf  engine: prompted" in shown.stdout
    assert "model: ?" not in shown.stdout
