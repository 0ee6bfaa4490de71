"""`parlay serve` with no upstream: the embedded model through the prompt-contract engine,
as `start_session()` builds it (a real subprocess; the model loads on the first request)."""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any

import httpx
import openai
import pytest
from proxy_stub import WEATHER_TOOL
from serve_process import parlay_serve
from typer.testing import CliRunner

from parlay.cli.app import app
from parlay.server.config import ServerConfig, build_backend
from parlay.server.embedded import Greedy

WEATHER: Any = WEATHER_TOOL


def test_no_upstream_serves_the_embedded_model_and_says_so() -> None:
    with parlay_serve("--threads", "1", "--client-key", "sk-1") as server:
        auth = {"Authorization": "Bearer sk-1"}
        health = httpx.get(server.url + "/health", headers=auth).json()
        server.proc.terminate()
        server.proc.wait(10)
        said = server.proc.stderr.read().decode() if server.proc.stderr else ""
    assert health["backend"].startswith("prompted:")
    first = said.splitlines()[0]
    assert first.startswith(f"parlay serve: {server.url} -> embedded model ")
    assert "SmolLM2-135M-Instruct" in first
    assert "prompt-contract engine" in first
    assert "1 thread" in first


@pytest.mark.model
def test_serve_loads_the_embedded_model_at_start_and_says_when_it_is_ready() -> None:
    lines: queue.Queue[str] = queue.Queue()
    with parlay_serve("--threads", "1") as server:
        stderr = server.proc.stderr
        assert stderr is not None
        # A thread reads: a wait on the queue is bounded, a readline on the pipe is not.
        threading.Thread(
            target=lambda: [lines.put(b.decode()) for b in stderr], daemon=True
        ).start()
        said: list[str] = []
        deadline = time.monotonic() + 120
        while not any(line.endswith("; ready") for line in said):
            try:
                said.append(lines.get(timeout=max(0.1, deadline - time.monotonic())).rstrip())
            except queue.Empty:
                pytest.fail(f"never said it was ready: {said}")
    assert "loading now" in said[0]
    ready = said[-1]
    assert ready.startswith("parlay serve: SmolLM2-135M-Instruct") and " loaded in " in ready


def test_embedded_backend_is_default_backend_greedy() -> None:
    from parlay.engine.backend import PromptedBackend
    from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE

    backend = build_backend(ServerConfig(threads=1))
    assert isinstance(backend, Greedy)
    engine = backend.inner
    assert isinstance(engine, PromptedBackend)
    assert engine.min_call_confidence == EMBEDDED_MIN_CALL_CONFIDENCE
    assert engine.inner._threads == 1  # type: ignore[attr-defined]


def test_embedded_refuses_upstream_only_settings() -> None:
    for flags, says in (
        (["--upstream-model", "m"], "need --upstream-url"),
        (["--tools", "native"], "--tools native needs an --upstream-url"),
        (["--threads", "0"], "greater than or equal to 1"),  # typer's, as for prompt's
    ):
        result = CliRunner().invoke(app, ["serve", *flags])
        assert result.exit_code == 2, result.output
        assert says in result.output


@pytest.mark.model
def test_openai_sdk_gets_a_tool_call_or_an_answer_from_the_embedded_model() -> None:
    with parlay_serve("--threads", "1") as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model="parlay",
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=[WEATHER],
            max_tokens=64,
            timeout=120,
        )
    choice = reply.choices[0]
    assert reply.object == "chat.completion"
    if choice.finish_reason == "tool_calls":
        assert choice.message.tool_calls
        for call in choice.message.tool_calls:
            assert call.type == "function"
            assert call.function.name == "get_weather"
            assert isinstance(json.loads(call.function.arguments), dict)
            assert call.id
    else:
        assert choice.finish_reason in ("stop", "length")
        assert choice.message.content
