"""`parlay serve` with no upstream: the embedded model, as `start_session()` runs it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from attrs import evolve

from parlay.backends.base import Backend, Capabilities
from parlay.backends.tokens import TokenCount, count_tokens
from parlay.backends.window import ContextWindow, context_window
from parlay.engine.config import EngineChanges
from parlay.events import Event
from parlay.request import ChatRequest


class Greedy:
    """`inner` at temperature 0 where a request sets none, as `start_session()` samples
    the embedded model: a 135M model follows the tool contract far better greedily."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """The inner model's own count (its tokenizer, for the embedded model)."""
        return await count_tokens(self.inner, request)

    async def context_window(self) -> ContextWindow | None:
        return await context_window(self.inner)

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if request.options.temperature is None:
            request = request.replace(options=evolve(request.options, temperature=0))
        return self.inner.stream(request)


def embedded_backend(
    threads: int | None, n_ctx: int | None = None, engine: EngineChanges | None = None
) -> Backend:
    """Exactly `parlay.start.default_backend(threads=..., n_ctx=...)`, greedy by default;
    `engine` settings given on the command line change the prompt-contract engine's own."""
    from parlay.engine.backend import PromptedBackend, behind_engine
    from parlay.start import default_backend

    backend = default_backend(threads=threads, n_ctx=n_ctx)
    if isinstance(backend, PromptedBackend):  # a native server keeps its own tool calling
        backend = behind_engine(backend, engine or EngineChanges())
    return Greedy(backend)


def describe_embedded(threads: int | None) -> str:
    """What `embedded_backend` will serve, in words, without loading the model."""
    if os.environ.get("PARLAY_OPENAI_BASE_URL"):
        model = os.environ.get("PARLAY_MODEL") or "its default model"
        return f"{model} at $PARLAY_OPENAI_BASE_URL ({os.environ['PARLAY_OPENAI_BASE_URL']})"
    from parlay.backends.local import default_model_path
    from parlay.backends.window import embedded_window

    if threads is not None:
        cpu = f"{threads} thread{'s' if threads != 1 else ''}"
    elif os.environ.get("PARLAY_THREADS"):
        cpu = f"{os.environ['PARLAY_THREADS']} threads from $PARLAY_THREADS"
    else:
        cpu = "threads: the cores free when it loads"
    path = default_model_path()
    window = embedded_window(None, path)
    return (
        f"embedded model {path.name} through the prompt-contract engine, "
        f"greedy unless a request sets a temperature, {cpu}, context window "
        f"{window.tokens:,} tokens ({window.source}); loading now"
    )
