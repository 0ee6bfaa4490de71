"""`parlay serve` for a team, with real parts: PostgreSQL, two replicas logging to it and
nginx in front (Debian's packages; `.ci/run` installs them where missing), 200
conversations of three turns with a tool at once through nginx. Every turn is in the
log exactly once and reads back whole (`parlay logs`, `Store.context`); the replicas'
`/metrics` add up to the requests sent (the second replica runs two worker processes,
whose metrics add up in one `/metrics`). Then the first replica is killed midway through
200 more: no client sees an error, and nothing answered is missing from the log.

Select it with `-m gateway`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_parts import (
    ANSWER,
    RESULT,
    conversation,
    find_binaries,
    find_nginx,
    nginx,
    postgres_server,
    replica,
    stub_upstream,
)

from parlay import Store
from parlay.context import AssistantMessage, SystemMessage, ToolResult, UserMessage

pytestmark = [
    pytest.mark.gateway,
    pytest.mark.skipif(isinstance(find_binaries(), str), reason=str(find_binaries())),
    pytest.mark.skipif(
        find_nginx() is None, reason="nginx is not installed (apt-get install nginx)"
    ),
]

CONVERSATIONS = 200


@pytest.fixture(scope="module")
def parts() -> Iterator[dict[str, Any]]:
    pytest.importorskip("psycopg")
    pytest.importorskip("prometheus_client")
    with postgres_server("fsync=off") as log, stub_upstream() as upstream:  # noqa: SIM117
        with (
            replica(upstream, "--log", log, "--metrics") as one,
            # two worker processes: their metrics add up in one /metrics
            replica(upstream, "--log", log, "--metrics", "--workers", "2") as two,
            nginx([one.port, two.port]) as url,
        ):
            yield {"log": log, "url": url, "replicas": [one, two], "upstream": upstream}


async def _many(url: str, first: int, count: int, workers: set[str] | None = None) -> list[Any]:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        jobs = [conversation(client, n, workers) for n in range(first, first + count)]
        return await asyncio.gather(*jobs, return_exceptions=True)


def _requests_answered(url: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "parlay_requests_total" and labels.get("status") == "200":
                total += sample.value
    return total


def _check_logged_whole(store: Store, sent: list[dict[str, Any]]) -> None:
    """One conversation's three turns, each once, and its context as the client had it."""
    opening = sent[1]["content"]
    (row,) = store.responses(query=opening, limit=None)  # only its first turn says it
    session = row.session_id
    rows = list(reversed(store.responses(session_id=session, limit=None)))
    assert [r.prompt for r in rows] == [opening, None, sent[5]["content"]], rows
    assert [r.text for r in rows] == ["", ANSWER, ANSWER]
    back = store.context(session).messages()
    assert [type(m) for m in back] == [
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolResult,
        AssistantMessage,
        UserMessage,
        AssistantMessage,
    ]
    call = back[2].tool_calls[0]  # type: ignore[union-attr]
    assert call.id == sent[2]["tool_calls"][0]["id"]
    assert (back[3].call_id, back[3].output) == (call.id, RESULT)  # type: ignore[union-attr]


def test_two_replicas_behind_nginx_log_every_turn_once_and_count_every_request(
    parts: dict[str, Any],
) -> None:
    workers: set[str] = set()
    results = asyncio.run(_many(parts["url"], 0, CONVERSATIONS, workers))
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed == [], failed[:3]
    store = Store(parts["log"])
    assert store.count() == 3 * CONVERSATIONS
    assert len(store.sessions(limit=None)) == CONVERSATIONS
    keys = Counter(r.request_key for r in store.responses(limit=None))
    assert len(keys) == 3 * CONVERSATIONS and None not in keys  # nginx's ids, each once
    for sent in results:
        _check_logged_whole(store, sent)
    # `parlay logs` reads the same database
    env = {**os.environ, "PARLAY_LOG_DB": parts["log"]}
    listed = subprocess.run(
        [sys.executable, "-m", "parlay.cli.app", "logs", "--json", "-n", "1000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(lines) == 3 * CONVERSATIONS
    assert sum(len(line["tool_calls"]) for line in lines) == CONVERSATIONS
    # The second replica's /metrics counts both its workers' requests.
    answered = [_requests_answered(r.url) for r in parts["replicas"]]
    assert sum(answered) == 3 * CONVERSATIONS
    assert all(n > 0 for n in answered), answered  # nginx used both
    assert len(workers) == 3, workers  # the first replica's process, the second's two


def test_a_replica_killed_midway_costs_no_client_an_error_nor_the_log_a_turn(
    parts: dict[str, Any],
) -> None:
    store = Store(parts["log"])
    before = store.count()
    victim = parts["replicas"][0]

    async def run() -> list[Any]:
        work = asyncio.create_task(_many(parts["url"], 10_000, CONVERSATIONS))
        # Kill it once the run is well under way: requests are in flight on it.
        while store.count() - before < CONVERSATIONS:
            await asyncio.sleep(0.02)
        victim.send_signal(signal.SIGKILL)
        return await work

    results = asyncio.run(run())
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed == [], failed[:3]
    assert victim.wait(10) == -signal.SIGKILL
    assert store.count() - before == 3 * CONVERSATIONS
    for sent in results:
        _check_logged_whole(store, sent)
