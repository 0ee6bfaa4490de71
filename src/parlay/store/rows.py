"""How the log's records become rows (SQLite's or PostgreSQL's: the same statements), and
rows records again."""

from __future__ import annotations

import json
from typing import Any

from parlay.store.records import LoggedCall, LoggedResponse, LoggedResult, LoggedSession


def insert_calls(conn: Any, response_id: int, response: LoggedResponse) -> None:
    conn.executemany(
        "INSERT INTO tool_calls (response_id, round, call_id, name, arguments) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (response_id, c.round, c.call_id, c.name, json.dumps(c.arguments))
            for c in response.calls
        ],
    )
    # One result per call: a conversation continued from the log (`parlay prompt -c`)
    # shows the model its earlier results again, and they are logged already.
    conn.executemany(
        "INSERT INTO tool_results (response_id, call_id, name, output, error) "
        "SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS "
        "(SELECT 1 FROM tool_results WHERE call_id = ?)",
        [(response_id, r.call_id, r.name, r.output, r.error, r.call_id) for r in response.results],
    )


def response_columns(response: LoggedResponse) -> tuple[Any, ...]:
    """A response's columns from `created_at` to `diagnostics`, in the table's order."""
    diagnostics = response.diagnostics
    return (
        response.created_at,
        response.backend,
        response.model,
        response.prompt,
        response.text,
        response.finish_reason,
        response.prompt_tokens,
        response.completion_tokens,
        response.first_event_ms,
        response.duration_ms,
        json.dumps(diagnostics) if diagnostics is not None else None,
    )


def replace_response(conn: Any, response_id: int, response: LoggedResponse) -> None:
    """Row `response_id` becomes `response`, without its calls and results (the caller
    writes the new ones)."""
    conn.execute("DELETE FROM tool_results WHERE response_id = ?", (response_id,))
    conn.execute("DELETE FROM tool_calls WHERE response_id = ?", (response_id,))
    conn.execute(
        "UPDATE responses SET created_at = ?, backend = ?, model = ?, prompt = ?, text = ?, "
        "finish_reason = ?, prompt_tokens = ?, completion_tokens = ?, first_event_ms = ?, "
        "duration_ms = ?, diagnostics = ? WHERE id = ?",
        (*response_columns(response), response_id),
    )


def insert_parent(conn: Any, session: LoggedSession) -> None:
    # A fork's parent is written once, with its first response (see `Session.fork`).
    if session.parent_id is not None:
        conn.execute(
            "UPDATE sessions SET parent_id = ?, parent_response_id = ? "
            "WHERE id = ? AND parent_id IS NULL",
            (session.parent_id, session.parent_response_id, session.id),
        )


def read_response(conn: Any, row: Any) -> LoggedResponse:
    calls = tuple(
        LoggedCall(c["call_id"], c["name"], json.loads(c["arguments"]), c["round"])
        for c in conn.execute(
            "SELECT * FROM tool_calls WHERE response_id = ? ORDER BY id", (row["id"],)
        )
    )
    results = tuple(
        LoggedResult(r["call_id"], r["name"], r["output"], r["error"])
        # A result is written with the turn that showed it to the model (often the next
        # one); it belongs to the call that asked for it, so join on the call id.
        # The first result of each call: logs written before results were kept once
        # per call may hold a call's result twice.
        for r in conn.execute(
            "SELECT * FROM tool_results WHERE id IN (SELECT MIN(id) FROM tool_results "
            "WHERE call_id IN (SELECT call_id FROM tool_calls WHERE response_id = ?) "
            "GROUP BY call_id) ORDER BY id",
            (row["id"],),
        )
    )
    return LoggedResponse(
        session_id=row["session_id"],
        text=row["text"],
        prompt=row["prompt"],
        backend=row["backend"],
        model=row["model"],
        finish_reason=row["finish_reason"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        first_event_ms=row["first_event_ms"],
        duration_ms=row["duration_ms"],
        diagnostics=json.loads(row["diagnostics"]) if row["diagnostics"] else None,
        calls=calls,
        results=results,
        created_at=row["created_at"],
        id=row["id"],
        request_key=row["request_key"],
    )


def read_session(row: Any) -> LoggedSession:
    return LoggedSession(
        row["id"],
        row["created_at"],
        row["source"],
        row["backend"],
        row["system"],
        tuple(json.loads(row["tools"])),
        parent_id=row["parent_id"],
        parent_response_id=row["parent_response_id"],
    )
