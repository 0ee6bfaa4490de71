"""Shared fixtures: a real llama.cpp server with a real model, started once per run."""

from __future__ import annotations

import os

import pytest

from parlay.backends.base import PLAIN_CHAT
from parlay.backends.local import LlamaServer, smollm2_path
from parlay.backends.openai import OpenAIBackend


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
