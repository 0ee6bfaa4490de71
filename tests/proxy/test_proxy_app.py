"""The proxy app in-process (httpx ASGI transport) over a ScriptedBackend: status codes,
error shapes, keys, models, and what reaches the backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from parlay import (
    AssistantMessage,
    Capabilities,
    ChatRequest,
    PromptedBackend,
    ScriptedBackend,
    ToolCall,
    ToolChoice,
    ToolResult,
)
from parlay.engine.checks.confidence import DEFAULT_CALL_CONFIDENCE
from parlay.errors import ConfigurationError
from parlay.events import Event, ScoredTextDelta, TextDelta, TokenChoice
from parlay.server import ServerConfig, create_app

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def client_for(backend: Any, **kwargs: Any) -> httpx.AsyncClient:
    app = create_app(backend, **kwargs)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://proxy")


def oa(**extra: Any) -> dict[str, Any]:
    return {"model": "smol", "messages": [{"role": "user", "content": "hi"}], **extra}


def an(**extra: Any) -> dict[str, Any]:
    return {
        "model": "smol",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


async def test_bad_json_is_400_in_each_shape() -> None:
    async with client_for(ScriptedBackend(["x"])) as c:
        r = await c.post("/v1/chat/completions", content=b"{nope")
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        r = await c.post("/v1/messages", content=b"{nope")
        assert r.status_code == 400
        assert r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"


async def test_missing_fields_are_400_naming_the_field() -> None:
    async with client_for(ScriptedBackend(["x"])) as c:
        r = await c.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
        assert r.status_code == 400 and "`model` is required" in r.json()["error"]["message"]
        r = await c.post(
            "/v1/messages", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )
        assert r.status_code == 400 and "`max_tokens` is required" in r.json()["error"]["message"]


async def test_keys() -> None:
    async with client_for(ScriptedBackend(["a", "b", "c", "d"]), client_keys=["k1", "k2"]) as c:
        r = await c.post("/v1/chat/completions", json=oa())
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        r = await c.post(
            "/v1/chat/completions", json=oa(), headers={"Authorization": "Bearer wrong"}
        )
        assert r.status_code == 401
        r = await c.post("/v1/messages", json=an(), headers={"x-api-key": "wrong"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        r = await c.post("/v1/chat/completions", json=oa(), headers={"Authorization": "Bearer k2"})
        assert r.status_code == 200
        r = await c.post("/v1/messages", json=an(), headers={"x-api-key": "k1"})
        assert r.status_code == 200
        r = await c.get("/v1/models")
        assert r.status_code == 401


async def test_unknown_model_is_404() -> None:
    async with client_for(ScriptedBackend(["x"]), models=["smol"]) as c:
        r = await c.post("/v1/chat/completions", json=oa(model="gpt-9"))
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
        assert "smol" in r.json()["error"]["message"]
        r = await c.post("/v1/messages", json=an(model="claude-9"))
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


async def test_models_and_health() -> None:
    async with client_for(ScriptedBackend(["x"]), models=["smol", "smol-tools"]) as c:
        r = await c.get("/v1/models")
        assert [m["id"] for m in r.json()["data"]] == ["smol", "smol-tools"]
        assert r.json()["object"] == "list"
        r = await c.get("/v1/models", headers={"anthropic-version": "2023-06-01"})
        assert r.json()["data"][0]["type"] == "model" and r.json()["has_more"] is False
        r = await c.get("/health")
        assert r.status_code == 200 and r.json()["status"] == "ok"


async def test_request_reaches_backend_decoded_without_the_client_model_name() -> None:
    backend = ScriptedBackend([ToolCall("get_weather", {"city": "Paris"}, "c1")])
    async with client_for(backend) as c:
        r = await c.post(
            "/v1/chat/completions",
            json=oa(
                tools=[WEATHER], tool_choice="required", parallel_tool_calls=False, max_tokens=9
            ),
        )
    assert r.status_code == 200
    message = r.json()["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    sent: ChatRequest = backend.requests[0]
    assert sent.model is None  # the upstream answers with its own model
    assert sent.tool_choice == ToolChoice("required") and not sent.parallel_tool_calls
    assert sent.options.max_tokens == 9


async def test_later_turn_without_tools_keeps_its_history() -> None:
    """No server state: the calls and results in the history reach the backend intact."""
    backend = ScriptedBackend(["It is sunny."])
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    async with client_for(backend) as c:
        r = await c.post("/v1/chat/completions", json={"model": "m", "messages": history})
        assert r.status_code == 200
    sent = backend.requests[0]
    assert sent.tools == ()
    assert sent.messages[1] == AssistantMessage(
        "", (ToolCall("get_weather", {"city": "Paris"}, "c1"),)
    )
    assert sent.messages[2] == ToolResult("c1", "get_weather", "sunny")


async def test_anthropic_round_trip_through_backend() -> None:
    backend = ScriptedBackend(
        [AssistantMessage("On it.", (ToolCall("get_weather", {"city": "Oslo"}, "toolu_1"),))]
    )
    async with client_for(backend) as c:
        r = await c.post(
            "/v1/messages",
            json=an(
                tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
                tool_choice={"type": "tool", "name": "get_weather"},
            ),
        )
    data = r.json()
    assert data["stop_reason"] == "tool_use"
    assert [b["type"] for b in data["content"]] == ["text", "tool_use"]
    assert data["content"][1]["input"] == {"city": "Oslo"}
    assert backend.requests[0].tool_choice == ToolChoice("tool", "get_weather")


class ScoredBackend(ScriptedBackend):
    """Scripted text scored as one token per delta when the request asks for log-
    probabilities: what an OpenAI-compatible upstream sends then."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        async for event in super().stream(request):
            if isinstance(event, TextDelta) and request.options.top_logprobs is not None:
                event = ScoredTextDelta(event.text, (TokenChoice(event.text, -0.5),))
            yield event


def scored_upstream() -> ScoredBackend:
    plain = Capabilities(native_tools=False, json_schema=False)
    return ScoredBackend(lambda _: "Hello there, friend.", capabilities=plain, chunk_size=5)


def sse_chunks(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def content_and_tokens(choice: dict[str, Any], key: str) -> tuple[str, str | None]:
    """A choice's text and its logprob tokens joined (None when `logprobs` is null)."""
    logprobs = choice["logprobs"]
    tokens = None if logprobs is None else "".join(e["token"] for e in logprobs["content"])
    return choice[key].get("content") or "", tokens


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_logprobs_pass_through_the_engine_without_tools(stream: bool) -> None:
    upstream = scored_upstream()
    async with client_for(PromptedBackend(upstream)) as c:
        r = await c.post(
            "/v1/chat/completions", json=oa(logprobs=True, top_logprobs=1, stream=stream)
        )
    assert r.status_code == 200
    assert upstream.requests[0].options.top_logprobs == 1
    if not stream:
        text, tokens = content_and_tokens(r.json()["choices"][0], "message")
        assert text == tokens == "Hello there, friend."
        return
    pairs = [content_and_tokens(ch["choices"][0], "delta") for ch in sse_chunks(r.text)[1:-1]]
    assert len(pairs) > 1 and all(text == tokens for text, tokens in pairs)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_logprobs_are_null_for_text_the_engine_parsed(stream: bool) -> None:
    """With tools in play the client's text comes from the engine's parser, not token by
    token from the model: null, rather than numbers for other tokens."""
    async with client_for(PromptedBackend(scored_upstream())) as c:
        r = await c.post(
            "/v1/chat/completions",
            json=oa(tools=[WEATHER], logprobs=True, top_logprobs=1, stream=stream),
        )
    assert r.status_code == 200
    chunks = sse_chunks(r.text) if stream else [r.json()]
    key = "delta" if stream else "message"
    choices = [ch["choices"][0] for ch in chunks if ch["choices"]]
    assert "".join(content_and_tokens(choice, key)[0] for choice in choices).strip()
    assert all(choice["logprobs"] is None for choice in choices)


async def test_top_logprobs_without_logprobs_is_400() -> None:
    async with client_for(ScriptedBackend(["x"])) as c:
        r = await c.post("/v1/chat/completions", json=oa(top_logprobs=2))
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
        assert "`top_logprobs` needs `logprobs: true`" in r.json()["error"]["message"]
        r = await c.post("/v1/chat/completions", json=oa(logprobs=True, top_logprobs=99))
        assert r.status_code == 400 and "from 0 to 20" in r.json()["error"]["message"]


def test_config_refuses_open_non_loopback() -> None:
    with pytest.raises(ConfigurationError, match="without a client key"):
        ServerConfig("http://up/v1", host="0.0.0.0")
    assert ServerConfig("http://up/v1", host="0.0.0.0", client_keys=("k",)).host == "0.0.0.0"
    assert ServerConfig("http://up/v1", host="::1").host == "::1"


def test_config_from_env_and_flags() -> None:
    env = {
        "PARLAY_SERVE_UPSTREAM_URL": "http://env/v1",
        "PARLAY_SERVE_MODELS": "a, b",
        "PARLAY_SERVE_CLIENT_KEYS": "k1,k2",
        "PARLAY_SERVE_PORT": "9001",
    }
    config = ServerConfig.from_env(env, port=None, tools="native", upstream_model="smol")
    assert config.upstream_url == "http://env/v1"
    assert config.models == ("a", "b") and config.client_keys == ("k1", "k2")
    assert config.port == 9001 and config.tools == "native" and config.host == "127.0.0.1"
    assert ServerConfig.from_env({}).upstream_url is None  # no upstream: the embedded model
    with pytest.raises(ConfigurationError, match="upstream-url"):
        ServerConfig.from_env({"PARLAY_SERVE_UPSTREAM_MODEL": "smol"})
    with pytest.raises(ConfigurationError, match="not a number"):
        ServerConfig.from_env({**env, "PARLAY_SERVE_PORT": "x"})


def test_the_call_confidence_is_set_by_env_or_flag_and_checked() -> None:
    from parlay import PromptedBackend
    from parlay.server import build_backend

    def confidence(config: ServerConfig) -> float:
        backend = build_backend(config)
        assert isinstance(backend, PromptedBackend)
        return backend.min_call_confidence

    env = {"PARLAY_SERVE_UPSTREAM_URL": "http://env/v1", "PARLAY_SERVE_MIN_CALL_CONFIDENCE": "0.1"}
    assert confidence(ServerConfig.from_env(env)) == 0.1
    assert confidence(ServerConfig.from_env(env, min_call_confidence=0.3)) == 0.3
    assert confidence(ServerConfig("http://up/v1")) == DEFAULT_CALL_CONFIDENCE
    with pytest.raises(ConfigurationError, match="between 0 and 1"):
        ServerConfig.from_env(env, min_call_confidence=25.0)
    with pytest.raises(ConfigurationError, match="not a number"):
        ServerConfig.from_env({**env, "PARLAY_SERVE_MIN_CALL_CONFIDENCE": "half"})


def test_build_backend_follows_the_tool_mode() -> None:
    from parlay import AnthropicBackend, OpenAIBackend, PromptedBackend
    from parlay.server import build_backend

    prompted = build_backend(
        ServerConfig.from_env({}, upstream_url="http://up/v1", upstream_model="m", max_retries=0)
    )
    assert isinstance(prompted, PromptedBackend)
    assert prompted.capabilities.native_tools
    native = build_backend(ServerConfig("http://up/v1", tools="native"))
    assert isinstance(native, OpenAIBackend) and native.capabilities.native_tools
    claude = build_backend(ServerConfig("http://up", upstream_kind="anthropic", tools="native"))
    assert isinstance(claude, AnthropicBackend)
    with pytest.raises(ConfigurationError, match="openai or anthropic"):
        ServerConfig("http://up", upstream_kind="gemini")  # type: ignore[arg-type]
