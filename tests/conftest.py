"""Shared fixtures: a real llama.cpp server with a real model, started once per run; a
plain chat model that stops where it is told."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Sequence

import pytest

from parlay.backends.base import PLAIN_CHAT, Capabilities
from parlay.backends.local import LlamaServer, smollm2_path
from parlay.backends.openai import OpenAIBackend
from parlay.events import Event, Finish, FinishReason, TextDelta
from parlay.request import ChatRequest


def pytest_configure(config: pytest.Config) -> None:
    """The run sees only what the README installs, never what this machine kept from
    earlier work: a model parlay once assembled in the user's cache (Qwen's file, built
    from its packages) would make a test pass here and fail on a fresh machine. The
    variables reach every subprocess the tests start (the CLI, `parlay serve`)."""
    isolated = tempfile.mkdtemp(prefix="parlay-test-home-")
    os.environ["PARLAY_CACHE_DIR"] = os.path.join(isolated, "cache")
    os.environ["PARLAY_LOG_DB"] = os.path.join(isolated, "logs.db")


@pytest.fixture(scope="session")
def llama_server() -> LlamaServer:
    """llama.cpp's own server on 127.0.0.1 (free port) with SmolLM2-135M-Instruct.

    Two parallel slots so a test that issues concurrent requests does not queue forever.
    """
    server = LlamaServer(
        smollm2_path(),
        n_ctx=8192,
        threads=int(os.environ["PARLAY_TEST_THREADS"])
        if "PARLAY_TEST_THREADS" in os.environ
        else None,
        parallel=2,
    )
    server.start()
    return server


@pytest.fixture
def llama_backend(llama_server: LlamaServer) -> OpenAIBackend:
    """The OpenAI-compatible backend pointed at the real llama.cpp server (plain chat)."""
    return OpenAIBackend(
        "smollm2", base_url=llama_server.base_url, api_key="", capabilities=PLAIN_CHAT
    )


@pytest.fixture
def llama_backend_blocking(llama_server: LlamaServer) -> OpenAIBackend:
    """Same server, non-streaming requests."""
    return OpenAIBackend(
        "smollm2", base_url=llama_server.base_url, api_key="", capabilities=PLAIN_CHAT, stream=False
    )


class StopsShort:
    """A plain chat model (no native tools, no grammar) that writes `pieces` and finishes
    for `reason`: by default the token limit, wherever the pieces leave off."""

    name = "stops-short"
    capabilities = Capabilities(native_tools=False, json_schema=False)

    def __init__(self, pieces: Sequence[str], reason: FinishReason = "length") -> None:
        self.pieces, self.reason, self.asked = pieces, reason, 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.asked += 1
        for piece in self.pieces:
            yield TextDelta(piece)
        yield Finish(self.reason)


@pytest.fixture(scope="session")
def stops_short() -> type[StopsShort]:
    """`stops_short(pieces, reason="length")`: a `StopsShort` model."""
    return StopsShort
