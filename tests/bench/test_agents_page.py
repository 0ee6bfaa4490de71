"""bench/agents.py's page reads what the relay recorded: tokens against the window, what
was shrunk, 4xx/5xx, and turn 2 against turn 1 over the client's own (fitted) turns."""

from __future__ import annotations

from typing import Any

from bench.agents_cache import TIMINGS, prompt_read
from bench.agents_page import cache_table, cell_rows, rates, turn_ratio


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


def test_turn_two_reads_the_model_servers_prompt_time_from_the_serve_log(tmp_path) -> None:
    log = tmp_path / "serve.log"
    line = ("DEBUG parlay.model: prompt: 4225 tokens, 4147 from the model server's cache,"
            " 78 read in 0.41 s; reply: 30 tokens in 2.00 s (http://127.0.0.1:1/v1)\n")  # fmt: skip
    log.write_text("turn 1 lines\n")
    start = log.stat().st_size
    first = "DEBUG     parlay.model: first token after 0.52 s (http://127.0.0.1:1/v1)\n"
    late = first.replace("0.52", "7.22")  # turn 1's last attempt, closed after it ended
    contract = "DEBUG     parlay.prompted: contract injected: format=json tools=[]\n"
    log.write_text("turn 1 lines\n" + late + contract + first + line + late + line)
    assert TIMINGS.search(line)
    assert prompt_read(log, start) == {
        "first_token_s": 0.52,
        "prompt": 4225,
        "cached": 4147,
        "read_s": 0.41,
    }
    assert prompt_read(log, log.stat().st_size) == {}


def test_the_cache_table_puts_the_models_first_token_ratio_beside_the_first_content_ratio() -> None:
    turns = [
        {"turn": "turn 1", "seconds": 60.0, "tokens": "4147", "first_token_s": 8.0},
        {"turn": "turn 2", "seconds": 15.0, "tokens": "4225", "first_token_s": 0.4, "cached": 4147},
        {"turn": "turn 2 again", "seconds": 14.0, "tokens": "4225"},
    ]
    table = cache_table([{"model": "smollm2", "turns": turns}])
    assert "| smollm2 | 4147 | 4225 | 4147 | 8.0 | 0.4 | 0.05 | 60.0 | 15.0 | 0.25 |" in table
    # rows from before the model's first token was logged
    old = [{k: v for k, v in t.items() if k != "first_token_s"} for t in turns]
    assert "| - | 60.0 | 15.0 | 0.25 |" in cache_table([{"model": "q", "turns": old}])
