"""The proxy's own log, metrics and probes, in-process (httpx's ASGI transport) over a
scripted plain-chat model behind the prompt engine: each request one row, read back
whole; a retried request logged once; `/metrics` counting requests, tokens and what the
engine did; `/ready` saying why not; a log that fails warning once, replies going on."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.gateway.gateway_parts import WEATHER

from parlay import PromptedBackend, ScriptedBackend, Store
from parlay.backends.base import PLAIN_CHAT
from parlay.context import AssistantMessage, ToolResult, UserMessage
from parlay.errors import BackendConnectionError
from parlay.request import ChatRequest
from parlay.server import create_app

RESULT = "sunny, 21 C"


def weather_model(request: ChatRequest) -> str:
    """A plain-chat model in the engine's JSON format: a call until it sees the result."""
    shown = json.dumps([str(getattr(m, "content", "")) for m in request.messages])
    if RESULT in shown:
        return json.dumps({"final": {"content": "It is sunny in Paris."}})
    return json.dumps({"action": {"tool": "get_weather", "args": {"city": "Paris"}}})


def engine() -> PromptedBackend:
    return PromptedBackend(ScriptedBackend(weather_model, capabilities=PLAIN_CHAT))


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://proxy")


async def conversation(c: httpx.AsyncClient, opening: str, **headers: str) -> list[Any]:
    """Three turns with a tool, as a client runs them; the messages it ends with."""
    messages: list[Any] = [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": opening},
    ]
    for turn in range(3):
        body = {"model": "m", "messages": messages, "tools": [WEATHER]}
        r = await c.post("/v1/chat/completions", json=body, headers=headers)
        assert r.status_code == 200, r.text
        message = r.json()["choices"][0]["message"]
        messages.append({k: v for k, v in message.items() if v is not None})
        for call in message.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": RESULT})
        if turn == 1:
            messages.append({"role": "user", "content": "And tomorrow?"})
    return messages


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


async def test_each_request_of_a_tool_conversation_is_one_row_and_reads_back_whole(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "log.db")
    async with client(create_app(engine(), log=store)) as c:
        sent = await conversation(c, "Weather in Paris?")
    (session,) = store.sessions()
    assert session.source == "serve" and session.system == "You help."
    assert session.tools == ("get_weather",)
    rows = list(reversed(store.responses(limit=None)))
    assert [r.prompt for r in rows] == ["Weather in Paris?", None, "And tomorrow?"]
    assert [c.name for c in rows[0].calls] == ["get_weather"]
    assert [r.output for r in rows[0].results] == [RESULT]  # brought by the next request
    assert rows[1].text == "It is sunny in Paris."
    assert rows[0].diagnostics is not None and rows[0].diagnostics["calls_parsed"] == 1
    back = store.context(session.id).messages()
    kinds = [type(m).__name__ for m in back]
    assert kinds == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert isinstance(back[3], ToolResult) and back[3].output == RESULT
    assert (
        isinstance(back[2], AssistantMessage)
        and back[2].tool_calls[0].id == (sent[2]["tool_calls"][0]["id"])
    )
    assert isinstance(back[5], UserMessage) and back[5].content == "And tomorrow?"
    assert [getattr(m, "content", None) for m in back[-3:]][-1] == sent[-1]["content"]


async def test_a_request_retried_with_its_request_id_is_logged_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    body = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}], "tools": [WEATHER]}
    async with client(create_app(engine(), log=store)) as c:
        for _ in range(2):
            r = await c.post("/v1/chat/completions", json=body, headers={"x-request-id": "r-1"})
            assert r.status_code == 200
        await c.post("/v1/chat/completions", json=body, headers={"x-request-id": "r-2"})
    assert store.count() == 2


async def test_two_conversations_with_one_opening_are_kept_apart_by_the_session_header(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "log.db")
    async with client(create_app(engine(), log=store)) as c:
        await conversation(c, "Weather?", **{"x-parlay-session": "alice"})
        await conversation(c, "Weather?", **{"x-parlay-session": "bob"})
    assert sorted(s.id for s in store.sessions()) == ["alice", "bob"]
    assert len(store.context("alice").messages()) == 7


async def test_metrics_count_requests_tokens_and_what_the_engine_did() -> None:
    async with client(create_app(engine(), metrics=True)) as c:
        await conversation(c, "Weather in Paris?")
        assert (await c.post("/v1/chat/completions", content=b"{nope")).status_code == 400
        text = (await c.get("/metrics")).text
    ok = {"route": "chat_completions", "protocol": "openai", "mode": "prompted"}
    assert metric(text, "parlay_requests_total", status="200", **ok) == 3
    assert metric(text, "parlay_requests_total", status="400") == 1
    assert metric(text, "parlay_request_seconds_count", **ok) == 4
    assert metric(text, "parlay_time_to_first_token_seconds_count") == 3
    assert metric(text, "parlay_engine_calls_parsed_total") == 1
    assert metric(text, "parlay_tokens_total", direction="out") > 0


async def test_upstream_failures_are_counted_by_kind() -> None:
    def down(request: ChatRequest) -> str:
        raise BackendConnectionError("refused")

    async with client(create_app(ScriptedBackend(down), metrics=True)) as c:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert (await c.post("/v1/chat/completions", json=body)).status_code == 502
        text = (await c.get("/metrics")).text
    assert metric(text, "parlay_upstream_errors_total", kind="connection") == 1
    assert metric(text, "parlay_requests_total", status="502", mode="native") == 1


async def test_metrics_are_off_unless_asked_and_behind_the_client_key() -> None:
    async with client(create_app(engine())) as c:
        assert (await c.get("/metrics")).status_code == 404
    async with client(create_app(engine(), metrics=True, client_keys=["k"])) as c:
        assert (await c.get("/metrics")).status_code == 401
        scraped = await c.get("/metrics", headers={"authorization": "Bearer k"})
        assert scraped.status_code == 200 and "parlay_requests_total" in scraped.text


async def test_ready_says_why_not_and_turns_false_when_draining(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    async with client(create_app(engine(), log=Store(blocker / "sub" / "log.db"))) as c:
        r = await c.get("/ready")
        assert r.status_code == 503 and r.json()["reasons"] == ["the log does not take writes"]
    app = create_app(engine(), log=Store(tmp_path / "log.db"))
    async with client(app) as c:
        assert (await c.get("/ready")).json() == {"status": "ready"}
        app.state.proxy.drain()
        assert (await c.get("/ready")).status_code == 503


async def test_a_log_that_fails_warns_once_and_every_reply_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    app = create_app(engine(), log=Store(blocker / "sub" / "log.db"), metrics=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}]}
    with caplog.at_level(logging.WARNING, logger="parlay.server"):
        async with client(app) as c:
            for _ in range(3):
                assert (await c.post("/v1/chat/completions", json=body)).status_code == 200
            text = (await c.get("/metrics")).text
    said = [r.getMessage() for r in caplog.records if "cannot write to the log" in r.getMessage()]
    assert len(said) == 1, said
    assert metric(text, "parlay_log_turns_unwritten_total") == 3


async def test_a_streamed_reply_is_logged_with_its_calls_and_its_first_token_timed(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "log.db")
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [WEATHER],
    }
    async with client(create_app(engine(), log=store, metrics=True)) as c:
        async with c.stream("POST", "/v1/chat/completions", json=body) as r:
            lines = [line async for line in r.aiter_lines() if line.startswith("data:")]
        text = (await c.get("/metrics")).text
    assert lines[-1] == "data: [DONE]"
    (row,) = store.responses()
    assert [c.name for c in row.calls] == ["get_weather"] and row.first_event_ms is not None
    assert metric(text, "parlay_time_to_first_token_seconds_count", protocol="openai") == 1


def test_the_engines_counters_read_what_each_replys_diagnostics_say() -> None:
    from prometheus_client import generate_latest

    from parlay.diagnostics import Diagnostics, RetryRecord
    from parlay.events import Usage
    from parlay.server.metrics import Metrics

    metrics = Metrics("prompted")
    said = Diagnostics(
        calls_parsed=2,
        retries=(RetryRecord("refusal"), RetryRecord("no_call"), RetryRecord("refusal")),
        notes=("get_weather: coerced arguments to the schema", "something else"),
        unoffered_tools=("rm_rf",),
        shrunk=("examples", "descriptions"),
    )
    metrics.finished(Usage(100, 7), said)
    text = generate_latest(metrics.registry).decode()
    assert metric(text, "parlay_engine_calls_parsed_total") == 2
    assert metric(text, "parlay_engine_calls_repaired_total") == 1
    assert metric(text, "parlay_engine_retries_total", reason="refusal") == 2
    assert metric(text, "parlay_engine_retries_total", reason="no_call") == 1
    assert metric(text, "parlay_engine_refusals_asked_again_total") == 2
    assert metric(text, "parlay_engine_unoffered_calls_stopped_total") == 1
    assert metric(text, "parlay_engine_requests_shrunk_total") == 1
    assert metric(text, "parlay_tokens_total", direction="in") == 100


async def test_anthropic_and_responses_requests_are_logged_and_counted_by_protocol(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "log.db")
    tool = {"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}
    anthropic_body = {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather, Anthropic?"}],
        "tools": [tool],
    }
    responses_body = {"model": "m", "input": "Weather, Responses?"}
    async with client(create_app(engine(), log=store, metrics=True)) as c:
        assert (await c.post("/v1/messages", json=anthropic_body)).status_code == 200
        assert (await c.post("/v1/responses", json=responses_body)).status_code == 200
        text = (await c.get("/metrics")).text
    prompts = sorted(r.prompt or "" for r in store.responses(limit=None))
    assert prompts == ["Weather, Anthropic?", "Weather, Responses?"]
    assert metric(text, "parlay_requests_total", protocol="anthropic", route="messages") == 1
    assert metric(text, "parlay_requests_total", protocol="openai_responses") == 1
