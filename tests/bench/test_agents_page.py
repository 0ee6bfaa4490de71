"""bench/agents.py's page reads what the relay recorded: tokens against the window, what
was shrunk, 4xx/5xx, and turn 2 against turn 1 over the client's own (fitted) turns."""

from __future__ import annotations

from typing import Any

from bench.agents_page import cell_rows, rates, turn_ratio


def request(status: int = 200, first: float | None = 10.0, **headers: str) -> dict[str, Any]:
    return {"path": "/v1/messages", "status": status, "first_content_s": first,
            "headers": headers, "error": ""}  # fmt: skip


def row(task: str, done: bool, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "smollm2", "client": "codex", "version": "0.171.0", "task": task,
            "completed": done, "reason": "" if done else "the answer lacks 'x'",
            "seconds": 12.0, "requests": requests}  # fmt: skip


FITTED = {"x-parlay-context-window": "8192", "x-parlay-prompt-tokens": "4303; tokenizer"}


def test_a_cell_shows_tokens_against_the_window_what_was_shrunk_and_refusals() -> None:
    requests = [
        request(**FITTED, **{"x-parlay-shrunk": "examples,descriptions"}),
        request(
            400,
            None,
            **{"x-parlay-context-window": "8192", "x-parlay-prompt-tokens": "9000; estimate"},
        ),
    ]
    [cells] = cell_rows([row("read a file", False, requests)])
    assert cells[7] == "4303 / 8192"
    assert cells[8] == "examples,descriptions"
    assert cells[6] == "400"


def test_completion_is_counted_per_model_and_client() -> None:
    rows = [row("a", True, []), row("b", False, []), row("c", False, [])]
    assert rates(rows) == [["smollm2", "codex", "1 of 3"]]


def test_turn_two_is_read_against_turn_one_of_the_clients_own_turns_only() -> None:
    # A title request without tools (not fitted) is another conversation: not a turn.
    requests = [request(first=1.0), request(first=40.0, **FITTED), request(first=10.0, **FITTED)]
    assert turn_ratio([row("a", True, requests)]).startswith("median 0.25 over 1 cells")
    assert "no cell" in turn_ratio([row("a", True, [request(**FITTED)])])
