"""The systems compared on the same questions in the same run, against one llama.cpp server.

- `parlay`: the prompt-contract engine exactly as parlay ships it for the model. For
  SmolLM2 (the embedded model) that is `parlay.start.default_backend()`'s stack,
  `parlay.start.embedded_engine(LocalBackend(...))`; for Qwen it is what `parlay serve` builds in front
  of an OpenAI-compatible upstream (`parlay.server.config.build_backend`). `tool_choice`
  auto, parallel calls allowed, no `max_tokens` of the caller (the engine's own budget).
- `parlay:<variant>`: the same engine with `PromptedBackend.configure(**kwargs)`, for an
  ablation: add a line to `VARIANTS` (or pass `--variant name=JSON` to the CLI).
- `naive`, `toolproxy`: baselines the stored outcomes still show (their scripts are in
  git: `git show 1741c63:bench/bfcl/naive.py`, `...:bench/bfcl/toolproxy_system.py`).
- `llama.cpp`: `tools` sent natively to llama.cpp's server (jinja templates on, as
  `LlamaServer` starts it), `tool_choice` auto, `parallel_tool_calls` true (llama.cpp's
  own default is false).

Every system decodes greedily (temperature 0, seed 0). A system's `config` is what
enters the store's key: change anything in it and the outcomes are asked afresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

from attrs import evolve, frozen

from bench.bfcl.data import Question
from bench.bfcl.models import N_CTX, Model, models
from bench.bfcl.outcome import Reply
from parlay.backends.base import Backend, Capabilities
from parlay.backends.local import LocalBackend, shared_server
from parlay.backends.openai import OpenAIBackend
from parlay.engine.backend import PromptedBackend
from parlay.events import Event, Finish, TextDelta, ToolCallEnd
from parlay.request import ChatRequest, GenerationOptions
from parlay.server.config import ServerConfig, build_backend
from parlay.start import embedded_engine

BASELINES = ("llama.cpp",)
DEFAULT_SYSTEMS = ("parlay", *BASELINES)
# Ablations of the engine: name -> PromptedBackend.configure(**kwargs).
VARIANTS: dict[str, dict[str, Any]] = {
    "no-check-values": {"check_values": False},
    "no-retries": {"max_retries": 0},
    # The one knob off: every call the model writes goes on (`min_call_confidence`), the
    # calls a grammar forced too.
    "no-knob": {"min_call_confidence": 0.0},
    "no-refusal": {"rules_off": ["refusal"]},
    # The engine before issue 38 on the behaviour it changed: the knob off, the refusal
    # check off (it was opt-in).
    "before-38": {"min_call_confidence": 0.0, "rules_off": ["refusal"]},
    "typed": {"action_format": "typed"},
    "json": {"action_format": "json"},
    "fenced": {"action_format": "fenced"},  # under a grammar: held to the bare shape
    "no-restate": {"restate_request": False},
}
NATIVE = Capabilities(native_tools=True, json_schema=True)


class System(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def config(self) -> Mapping[str, Any]: ...

    async def answer(self, question: Question) -> Reply: ...


@frozen
class Setup:
    """What every system of one model shares: the server and the bench's own settings."""

    model: Model
    base_url: str
    n_ctx: int
    # The token budget of each baseline request (parlay keeps its shipped budget).
    max_tokens: int
    # The engine's tag changes with the engine; the baselines do not, so theirs stays and
    # their outcomes are reused across engine tags.
    tag: str = ""
    baseline_tag: str = ""
    # False: llama.cpp reads every prompt from its start (`cache_prompt: false`), so a
    # question asked again gets the same reply whatever ran before it. With the cache,
    # SmolLM2 answered 3 of 5 questions asked again in other words.
    prompt_cache: bool = True

    def config(self, kind: str, **more: Any) -> dict[str, Any]:
        # Keys the cache did not change stay as they were, so earlier outcomes still count.
        uncached = {} if self.prompt_cache else {"prompt_cache": False}
        return {
            "kind": kind,
            "model_file": self.model.path.name,
            "n_ctx": self.n_ctx,
            "temperature": 0,
            "tag": self.tag if kind == "parlay" else self.baseline_tag,
            **uncached,
            **more,
        }

    @property
    def extra_body(self) -> dict[str, Any]:
        return {} if self.prompt_cache else {"cache_prompt": False}


async def started(key: str, n_ctx: int = 0, max_tokens: int = 512, **settings: Any) -> Setup:
    """The model's llama.cpp server started (`shared_server`: the one the embedded
    LocalBackend finds), and the setup on it; `n_ctx` 0: the model's `N_CTX`."""
    [model] = models((key,))
    n_ctx = n_ctx or N_CTX[key]
    base_url = await asyncio.to_thread(shared_server(model.path, n_ctx).start)
    return Setup(model, base_url, n_ctx, max_tokens, **settings)


def greedy(max_tokens: int | None) -> GenerationOptions:
    return GenerationOptions(temperature=0.0, max_tokens=max_tokens, seed=0)


async def stream_reply(backend: Backend, request: ChatRequest) -> Reply:
    """One request through a parlay backend, its events gathered into a Reply; a failed
    request is an outcome (`error`), not the end of the run."""
    text: list[str] = []
    calls: list[tuple[str, Any]] = []
    finish: Finish | None = None
    started = time.perf_counter()
    try:
        async for event in backend.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolCallEnd):
                calls.append((event.call.name, event.call.arguments))
            elif isinstance(event, Finish):
                finish = event
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        return Reply(calls, "".join(text), error, time.perf_counter() - started)
    seconds = time.perf_counter() - started
    diagnostics = finish.diagnostics if finish else None
    usage = finish.usage if finish else None
    return Reply(
        calls,
        "".join(text),
        seconds=seconds,
        retries=[r.reason for r in diagnostics.retries] if diagnostics else [],
        notes=list(diagnostics.notes) if diagnostics else [],
        rules=list(diagnostics.rules) if diagnostics else [],
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        answer_share=diagnostics.answer_share if diagnostics else None,
    )


class Counted:
    """A backend counting the requests sent through it: the engine's cost per question."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.requests = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests += 1
        return self.inner.stream(request)


@frozen
class BackendSystem:
    """A parlay Backend asked each question with its tools, `tool_choice` auto."""

    name: str
    backend: Backend
    config: Mapping[str, Any]
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] = {}

    def request(self, question: Question) -> ChatRequest:
        return ChatRequest(
            question.messages,
            tools=question.offered_tools,
            parallel_tool_calls=True,
            options=greedy(self.max_tokens),
            extra_body=dict(self.extra_body),
        )

    async def answer(self, question: Question) -> Reply:
        counted = self.backend.inner if isinstance(self.backend, PromptedBackend) else None
        before = counted.requests if isinstance(counted, Counted) else 0
        reply = await stream_reply(self.backend, self.request(question))
        if isinstance(counted, Counted):
            return evolve(reply, requests=counted.requests - before)
        return evolve(reply, requests=1)


def shipped_engine(setup: Setup) -> PromptedBackend:
    """The engine as parlay ships it for this model (see the module's docstring)."""
    if setup.model.embedded:
        # `parlay.start.default_backend()`, on the bench's server (same path and n_ctx).
        return embedded_engine(LocalBackend(setup.model.path, n_ctx=setup.n_ctx))
    served = build_backend(ServerConfig(upstream_url=setup.base_url, upstream_model="model"))
    if not isinstance(served, PromptedBackend):
        raise TypeError(f"parlay serve no longer wraps its upstream in the engine: {served!r}")
    return served


def parlay_system(
    setup: Setup, variant: str = "", kwargs: Mapping[str, Any] | None = None
) -> BackendSystem:
    engine = shipped_engine(setup)
    changes = dict(kwargs or {})
    if changes:
        engine = engine.configure(**changes)
    engine.inner = Counted(engine.inner)
    shipped = "embedded" if setup.model.embedded else "serve"
    name = f"parlay:{variant}" if variant else "parlay"
    config = setup.config("parlay", shipped=shipped, configure=changes)
    return BackendSystem(name, engine, config, extra_body=setup.extra_body)


def native_system(setup: Setup) -> BackendSystem:
    backend = OpenAIBackend("model", base_url=setup.base_url, api_key="", capabilities=NATIVE)
    config = setup.config("llama.cpp", max_tokens=setup.max_tokens, parallel_tool_calls=True)
    # llama.cpp's own default is one call per reply; OpenAI's (and parlay's) is several.
    extra_body = {"parallel_tool_calls": True, **setup.extra_body}
    return BackendSystem("llama.cpp", backend, config, setup.max_tokens, extra_body)


def build(
    names: Sequence[str],
    setup: Setup,
    extra_variants: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[System]:
    """The named systems for one model (`parlay`, `parlay:<variant>`, the baselines)."""
    variants = {**VARIANTS, **(extra_variants or {})}
    out: list[System] = []
    for name in names:
        if name == "parlay":
            out.append(parlay_system(setup))
        elif name.startswith("parlay:"):
            variant = name.removeprefix("parlay:")
            if variant not in variants:
                raise ValueError(f"unknown variant {variant!r}; known: {', '.join(variants)}")
            out.append(parlay_system(setup, variant, variants[variant]))
        elif name == "llama.cpp":
            out.append(native_system(setup))
        else:
            raise ValueError(
                f"unknown system {name!r}: parlay, parlay:<variant>, {', '.join(BASELINES)}"
            )
    return out
