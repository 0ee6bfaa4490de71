"""Knowing the model's window: the embedded model's from its GGUF file or `$PARLAY_CTX`,
an upstream's asked once of whichever server it is; and the embedded model counted
with its own tokenizer through the proxy's greedy wrapper."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import httpx
import pytest

from parlay import OpenAIBackend
from parlay.backends.scripted import ScriptedBackend
from parlay.backends.tokens import CountMethod, TokenCount, count_tokens
from parlay.backends.window import (
    MAX_DEFAULT_CTX,
    ContextWindow,
    embedded_window,
    trained_window,
)
from parlay.context import UserMessage
from parlay.errors import ConfigurationError
from parlay.request import ChatRequest
from parlay.server.embedded import Greedy


def gguf(path: Path, context_length: int) -> Path:
    """A GGUF header: a string, an array (a vocabulary) and then the context length."""

    def string(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    keys = [
        string("general.architecture") + struct.pack("<I", 8) + string("llama"),
        string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + string("a") + string("bc"),
        string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + b"\0" * 12,
        string("llama.context_length") + struct.pack("<II", 4, context_length),
    ]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(keys)) + b"".join(keys))
    return path


def test_the_embedded_windows_default_is_the_models_trained_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PARLAY_CTX", raising=False)
    model = gguf(tmp_path / "m.gguf", 8192)
    assert trained_window(model) == 8192
    assert embedded_window(None, model) == ContextWindow(8192, "the model file's context_length")
    big = gguf(tmp_path / "big.gguf", 131072)
    assert embedded_window(None, big).tokens == MAX_DEFAULT_CTX
    assert embedded_window(2048, model) == ContextWindow(2048, "set")
    monkeypatch.setenv("PARLAY_CTX", "4096")
    assert embedded_window(None, model) == ContextWindow(4096, "$PARLAY_CTX")
    monkeypatch.setenv("PARLAY_CTX", "lots")
    with pytest.raises(ConfigurationError, match="PARLAY_CTX"):
        embedded_window(None, model)


def test_a_file_that_is_not_gguf_has_no_trained_window(tmp_path: Path) -> None:
    (tmp_path / "x.gguf").write_bytes(b"not a model")
    assert trained_window(tmp_path / "x.gguf") is None
    assert trained_window(tmp_path / "missing.gguf") is None


SERVERS: dict[str, dict[str, Any]] = {
    "llama.cpp": {"/props": {"default_generation_settings": {"n_ctx": 4096}}},
    "vllm": {"/v1/models": {"data": [{"id": "m", "max_model_len": 32768}]}},
    "lm studio": {"/api/v0/models": {"data": [{"id": "m", "max_context_length": 8192}]}},
    "ollama": {
        "/api/show": {"model_info": {"qwen2.context_length": 32768}, "parameters": "num_ctx 16384"}
    },
    "ollama without num_ctx": {"/api/show": {"model_info": {"qwen2.context_length": 32768}}},
    "openai": {"/v1/models": {"data": [{"id": "m"}]}},
}
FOUND = {
    "llama.cpp": 4096,
    "vllm": 32768,
    "lm studio": 8192,
    "ollama": 16384,
    "ollama without num_ctx": 4096,
    "openai": None,
}


@pytest.mark.parametrize("server", list(SERVERS))
def test_an_upstreams_window_is_asked_once_of_its_own_endpoint(server: str) -> None:
    asked: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        found = SERVERS[server].get(request.url.path)
        return httpx.Response(200, json=found) if found else httpx.Response(404, json={})

    backend = OpenAIBackend(
        "m", base_url="http://model.invalid/v1", transport=httpx.MockTransport(handle)
    )

    async def twice() -> list[ContextWindow | None]:
        return [await backend.context_window(), await backend.context_window()]

    first, second = asyncio.run(twice())
    assert first == second
    assert (first.tokens if first else None) == FOUND[server]
    assert len(asked) <= 4  # one pass over the endpoints, not one per request


def test_a_given_context_window_is_not_asked() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"asked {request.url}")

    backend = OpenAIBackend(
        "m",
        base_url="http://x.invalid/v1",
        transport=httpx.MockTransport(handle),
        context_window=2048,
    )
    assert asyncio.run(backend.context_window()) == ContextWindow(2048, "set")


class Counting(ScriptedBackend):
    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        return TokenCount(7, CountMethod.TOKENIZER)

    async def context_window(self) -> ContextWindow:
        return ContextWindow(8192, "test")


def test_count_tokens_on_the_embedded_model_uses_its_tokenizer() -> None:
    """`parlay serve`'s greedy wrapper hid the embedded model's tokenizer: every count was
    an estimate."""
    greedy = Greedy(Counting(["hi"]))
    chat = ChatRequest([UserMessage("hello " * 50)])
    assert asyncio.run(count_tokens(greedy, chat)) == TokenCount(7, CountMethod.TOKENIZER)
    assert asyncio.run(greedy.context_window()) == ContextWindow(8192, "test")


def test_serve_takes_the_embedded_models_window_as_ctx() -> None:
    """`--ctx` reaches the llama.cpp server the embedded model starts (issue 49: the window
    was fixed at 4,096 and Claude Code's first request could not fit)."""
    from parlay.backends.local import LocalBackend
    from parlay.server.config import ServerConfig, build_backend

    backend: object = build_backend(ServerConfig(ctx=2048))
    while not isinstance(backend, LocalBackend):
        backend = backend.inner  # type: ignore[attr-defined]
    assert asyncio.run(backend.context_window()).tokens == 2048


def test_serve_takes_an_upstreams_window_as_context_window() -> None:
    from parlay.server.config import ServerConfig, build_backend

    for kind in ("openai", "anthropic"):
        config = ServerConfig.from_env(
            {"PARLAY_SERVE_CONTEXT_WINDOW": "3000"},
            upstream_url="http://127.0.0.1:9/v1",
            upstream_kind=kind,
        )
        backend = build_backend(config)
        window = asyncio.run(backend.inner.context_window())  # type: ignore[attr-defined]
        assert window == ContextWindow(3000, "set")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"ctx": 2048, "upstream_url": "http://127.0.0.1:9/v1"}, "--context-window"),
        ({"context_window": 2048}, "--ctx"),
        ({"ctx": 10}, "at least 256"),
    ],
)
def test_a_window_flag_for_the_other_kind_of_model_is_refused_with_the_right_flag(
    settings: dict[str, object], says: str
) -> None:
    from parlay.errors import ConfigurationError
    from parlay.server.config import ServerConfig

    with pytest.raises(ConfigurationError, match=says):
        ServerConfig(**settings)  # type: ignore[arg-type]
