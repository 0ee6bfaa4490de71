"""The OpenAI-compatible and embedded backends against a real llama.cpp server and model."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from parlay import GenerationOptions, LocalBackend, Session, TextDelta
from parlay.backends.openai import OpenAIBackend

pytestmark = pytest.mark.model

SHORT = GenerationOptions(temperature=0, max_tokens=24)


@pytest.fixture(params=["server-stream", "server-blocking", "embedded"])
def backend(request, llama_backend, llama_backend_blocking):
    if request.param == "server-stream":
        return llama_backend
    if request.param == "server-blocking":
        return llama_backend_blocking
    return LocalBackend()


def test_chat_returns_text_usage_and_finish(backend):
    session = Session(backend)
    thunk = session.chat("Name one colour.", options=SHORT)
    assert thunk.value.strip()
    assert thunk.finish_reason in ("stop", "length")
    assert thunk.usage is not None and thunk.usage.completion_tokens > 0
    assert thunk.raw is not None


async def test_streaming_delivers_text_before_the_end(llama_backend: OpenAIBackend):
    thunk = Session(llama_backend).chat(
        "Count from one to ten in words.", options=GenerationOptions(temperature=0, max_tokens=40)
    )
    seen_while_running = 0
    async for _ in thunk:
        if not thunk.is_computed:
            seen_while_running += 1
    events = thunk.all_events()
    assert sum(isinstance(e, TextDelta) for e in events) > 3
    assert seen_while_running > 3


class City(BaseModel):
    name: str
    country: str


def test_json_schema_output_is_valid(backend):
    session = Session(backend)
    thunk = session.instruct(
        "Give a city and its country.",
        format=City,
        options=GenerationOptions(temperature=0, max_tokens=60),
    )
    parsed = thunk.parsed
    assert isinstance(parsed, City)
    assert json.loads(thunk.value) == parsed.model_dump()


async def test_concurrent_sessions_share_one_server(llama_backend: OpenAIBackend):
    sessions = [Session(llama_backend) for _ in range(3)]
    thunks = await asyncio.gather(
        *(s.achat(f"Say the number {i}.", options=SHORT) for i, s in enumerate(sessions))
    )
    assert all(t.value.strip() for t in thunks)
