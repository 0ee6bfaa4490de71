"""Turn 2 against turn 1: Claude Code's real first request (recorded from 2.1.197, its
24 tools) sent to `parlay serve` on the embedded model, then the same conversation one
turn on (the model's Bash call and its result appended), each timed to its first content,
and the model server's own time to its first token (its debug line, `parlay.model`).
What parlay renders for a conversation is the same bytes from turn to turn up to the new
messages, so llama.cpp reuses its prompt cache and turn 2 reads only what is new; the
client's first content also waits for the whole reply, which the engine checks first.

    python -m bench.agents --cache     (part of the agents page)
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx

from bench.agent_relay import CONTENT_MARKS

RECORDED = (
    Path(__file__).resolve().parents[1]
    / "tests" / "clients" / "data" / "claude_code_2.1.197_first_request.json"
)  # fmt: skip


def turn_two(first: dict[str, Any]) -> dict[str, Any]:
    """The conversation one turn on: the model called Bash, and the result came back."""
    second = copy.deepcopy(first)
    call = {"type": "tool_use", "id": "toolu_bench_1", "name": "Bash",
            "input": {"command": "ls", "description": "List the files"}}  # fmt: skip
    result = {"type": "tool_result", "tool_use_id": "toolu_bench_1",
              "content": "notes.txt\nstamp.sh\n"}  # fmt: skip
    second["messages"] += [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    return second


def first_content(url: str, body: dict[str, Any]) -> tuple[float, int, dict[str, str]]:
    """Seconds to the first content of a streamed reply, its status and parlay's headers.
    The reply is read to its end, as a client does, so that every line the server logs
    for this turn is written before the next turn begins."""
    started, first = time.monotonic(), None
    with httpx.stream("POST", url + "/v1/messages", json=body, timeout=1800,
                      headers={"x-api-key": "unused", "anthropic-version": "2023-06-01"}
                      ) as reply:  # fmt: skip
        headers = {k: v for k, v in reply.headers.items() if k.startswith("x-parlay")}
        for chunk in reply.iter_raw():
            if first is None and any(mark in chunk for mark in CONTENT_MARKS):
                first = time.monotonic() - started
    return first if first is not None else time.monotonic() - started, reply.status_code, headers


# The lines `parlay.backends.model_timings` writes for each reply of a model server.
FIRST_TOKEN = re.compile(r"first token after ([\d.]+) s")
TIMINGS = re.compile(
    r"prompt: (\d+) tokens, (\d+) from the model server's cache, \d+ read in ([\d.]+) s"
)


def prompt_read(log: Path, start: int) -> dict[str, Any]:
    """The model server's account of the turn's first attempt, from the serve log: its
    first token, and (when the reply was not cut short) how much came from its cache."""
    with log.open("rb") as lines:
        lines.seek(start)
        text = lines.read().decode(errors="replace")
    # An earlier turn's attempt stopped early logs its first token when it is closed,
    # which may be after that turn ended: this turn's own lines follow its contract line.
    text = text[max(text.find("contract injected"), 0) :]
    found: dict[str, Any] = {}
    if first := FIRST_TOKEN.search(text):
        found["first_token_s"] = float(first.group(1))
    if timings := TIMINGS.search(text):
        total, cached, seconds = timings.groups()
        found.update(prompt=int(total), cached=int(cached), read_s=float(seconds))
    return found


def measure(url: str, log: Path) -> dict[str, Any]:
    """Turn 1, then turn 2, then turn 2 again (all cached): seconds to first content, and
    the model server's seconds to read the prompt."""
    first = json.loads(RECORDED.read_text())
    second = turn_two(first)
    rows = []
    for name, body in (("turn 1", first), ("turn 2", second), ("turn 2 again", second)):
        start = log.stat().st_size
        seconds, status, headers = first_content(url, body)
        rows.append({"turn": name, "seconds": round(seconds, 2), "status": status,
                     "tokens": headers.get("x-parlay-prompt-tokens", ""),
                     "shrunk": headers.get("x-parlay-shrunk", ""),
                     **prompt_read(log, start)})  # fmt: skip
    return {"kind": "cache", "turns": rows}
