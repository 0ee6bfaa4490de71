"""`parlay serve` as users run it: flags, refusals, and the real command serving a stub."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from proxy_stub import StubUpstream, free_port
from typer.testing import CliRunner

from parlay.cli.app import app


def test_refuses_public_bind_without_a_key() -> None:
    result = CliRunner().invoke(
        app, ["serve", "--upstream-url", "http://up/v1", "--host", "0.0.0.0"]
    )
    assert result.exit_code == 2
    assert "without a client key" in result.output


def test_upstream_settings_without_an_upstream_say_what_serves_instead() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_SERVE_")}
    result = CliRunner().invoke(app, ["serve", "--upstream-key", "sk"], env=env)
    assert result.exit_code == 2
    assert "--upstream-url" in result.output
    assert "embedded model" in result.output


def test_the_command_serves(stub_upstream: StubUpstream) -> None:
    port = free_port()
    env = {**os.environ, "PARLAY_SERVE_CLIENT_KEYS": "sk-1", "PARLAY_SERVE_UPSTREAM_MODEL": "call"}
    code = "from parlay.cli.app import main; main()"
    args = [
        "serve",
        "--upstream-url",
        stub_upstream.base_url,
        "--tools",
        "native",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        body = {"model": "any", "messages": [{"role": "user", "content": "weather?"}]}
        assert httpx.post(url + "/v1/chat/completions", json=body).status_code == 401
        tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
        offered = {**body, "tools": [tool]}
        r = httpx.post(
            url + "/v1/chat/completions", json=offered, headers={"Authorization": "Bearer sk-1"}
        )
        assert r.status_code == 200
        assert (
            r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
        )
    finally:
        proc.terminate()
        proc.wait(10)


def test_workers_body_limit_and_port_are_checked() -> None:
    for flags, says in (
        (["--workers", "0"], "--workers must be at least 1"),
        (["--max-body-bytes", "10"], "--max-body-bytes must be at least 1024"),
        # uvicorn said it ran on 127.0.0.1:99999; a port of -1 failed after startup.
        (["--port", "99999"], "--port must be 1 to 65535, got 99999"),
        (["--port", "-1"], "--port must be 1 to 65535, got -1"),
    ):
        result = CliRunner().invoke(app, ["serve", "--upstream-url", "http://up/v1", *flags])
        assert result.exit_code == 2
        assert says in result.output


def test_workers_are_refused_for_the_embedded_model() -> None:
    # Each worker process would load its own copy of the model on the same cores.
    result = CliRunner().invoke(app, ["serve", "--workers", "2"])
    assert result.exit_code == 2
    assert "would load the embedded model 2 times" in result.output
    assert "--upstream-url" in result.output


def test_the_body_limit_comes_from_the_environment_too() -> None:
    from parlay.server import ServerConfig

    env = {"PARLAY_SERVE_UPSTREAM_URL": "http://up/v1", "PARLAY_SERVE_MAX_BODY_BYTES": "4096"}
    config = ServerConfig.from_env(env, workers=3)
    assert config.max_body_bytes == 4096 and config.workers == 3


def test_engine_rules_are_switched_by_flag_or_environment() -> None:
    from parlay.engine.backend import PromptedBackend
    from parlay.server import ServerConfig
    from parlay.server.config import build_backend

    env = {
        "PARLAY_SERVE_UPSTREAM_URL": "http://up/v1",
        "PARLAY_SERVE_RULES_OFF": "refusal",
        "PARLAY_SERVE_MIN_CALL_CONFIDENCE": "0.5",
    }
    engine = build_backend(ServerConfig.from_env(env))
    assert isinstance(engine, PromptedBackend) and not engine.rules.on("refusal")
    assert engine.min_call_confidence == 0.5
    flagged = build_backend(ServerConfig.from_env(env, rules_off=("forced_call",)))
    assert isinstance(flagged, PromptedBackend)  # the flag wins over the environment
    assert not flagged.rules.on("forced_call") and flagged.rules.on("refusal")
    shipped = build_backend(ServerConfig(upstream_url="http://up/v1"))
    assert isinstance(shipped, PromptedBackend) and shipped.rules.off == frozenset()
    result = CliRunner().invoke(
        app, ["serve", "--upstream-url", "http://up/v1", "--rule-off", "refusl"]
    )
    assert result.exit_code == 2 and "unknown rule(s) refusl" in result.output


def test_parlay_talks_to_its_own_proxy_by_its_bare_url(stub_upstream: StubUpstream) -> None:
    """`parlay prompt -m http://127.0.0.1:PORT/v1` and `start_session()` with
    `$PARLAY_OPENAI_BASE_URL` both met "HTTP 400: model is required" (the second as a raw
    traceback): the proxy's one model is now found at `/v1/models`."""
    from serve_process import parlay_serve

    with parlay_serve("--upstream-url", stub_upstream.base_url) as server:
        url = server.url + "/v1"
        env = {**os.environ, "PARLAY_LOG": "0", "PARLAY_LOG_DB": os.devnull}
        env.pop("PARLAY_OPENAI_BASE_URL", None)
        code = "from parlay.cli.app import main; main()"
        prompt = subprocess.run(
            [sys.executable, "-c", code, "prompt", "-m", url, "--no-log", "Say hello"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert prompt.returncode == 0, prompt.stderr
        assert "Hello from the stub." in prompt.stdout
        session = subprocess.run(
            [sys.executable, "-c", "import parlay; print(parlay.start_session().chat('hi').value)"],
            env={**env, "PARLAY_OPENAI_BASE_URL": url},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert session.returncode == 0, session.stderr
        assert "Hello from the stub." in session.stdout
