"""`start_session()`: a session on whatever model is configured, the embedded one by default."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeGuard

from attrs import evolve

from parlay.backends.base import PLAIN_CHAT, Backend

# Where they were first written, and where the tests and docs name them: re-exported.
from parlay.embedded_backends import EMBEDDED_ACTION_FORMAT as EMBEDDED_ACTION_FORMAT
from parlay.embedded_backends import EMBEDDED_MIN_CALL_CONFIDENCE as EMBEDDED_MIN_CALL_CONFIDENCE
from parlay.embedded_backends import EMBEDDED_RESTATE_REQUEST as EMBEDDED_RESTATE_REQUEST
from parlay.embedded_backends import embedded_backend as embedded_backend
from parlay.embedded_backends import embedded_engine as embedded_engine
from parlay.embedded_backends import embedded_stack as embedded_stack
from parlay.embedded_backends import greedy as greedy
from parlay.errors import ConfigurationError
from parlay.request import GenerationOptions
from parlay.session import Session
from parlay.store import Store
from parlay.store.records import LoggedResponse
from parlay.thunk import ModelOutputThunk
from parlay.tools import Tool

if TYPE_CHECKING:
    from parlay.backends.local import LocalBackend


def default_backend(*, threads: int | None = None, n_ctx: int | None = None) -> Backend:
    """The backend `start_session()` uses when none is given.

    `$PARLAY_OPENAI_BASE_URL` (with `$PARLAY_MODEL`) selects an OpenAI-compatible server,
    taken to call tools natively; `$PARLAY_TOOLS=prompted` puts it behind the prompted
    tool-calling engine instead (for a server whose model has no tool calling). Otherwise
    the embedded llama.cpp model, always behind the engine, with `threads` (None:
    `$PARLAY_THREADS`, else the cores free when it starts) and the window `n_ctx` (None:
    `$PARLAY_CTX`, else the one the model was trained for).
    """
    base_url = os.environ.get("PARLAY_OPENAI_BASE_URL")
    if base_url:
        return _configured_server(base_url)
    from parlay.backends.local import LocalBackend

    return embedded_stack(LocalBackend(threads=threads, n_ctx=n_ctx))


def _configured_server(base_url: str) -> Backend:
    from parlay.backends.openai import OpenAIBackend
    from parlay.engine.backend import PromptedBackend

    mode = os.environ.get("PARLAY_TOOLS", "native").strip().lower() or "native"
    if mode not in ("native", "prompted"):
        raise ConfigurationError(f"$PARLAY_TOOLS is {mode!r}: use native or prompted")
    model = os.environ.get("PARLAY_MODEL")
    if mode == "native":
        return OpenAIBackend(model, base_url=base_url)
    return PromptedBackend(OpenAIBackend(model, base_url=base_url, capabilities=PLAIN_CHAT))


def _is_local(backend: Backend) -> TypeGuard[LocalBackend]:
    from parlay.backends.local import LocalBackend

    return isinstance(backend, LocalBackend)


def start_session(
    backend: Backend | None = None,
    *,
    model: str | None = None,
    tools: Iterable[Tool | Callable[..., Any]] | None = None,
    system: str | None = None,
    chain_limit: int = 5,
    session_class: type[Session] = Session,
    log: bool | Store = False,
    options: GenerationOptions | None = None,
    resume: bool | str | int | None = None,
) -> Session:
    """A new session; with no backend, the embedded local model (see `default_backend`),
    or the embedded model named by `model` (`parlay models` lists them: smollm2, the
    default, and qwen2.5-coder). A bare `LocalBackend` is put behind the engine as
    those are (`embedded_stack`), so its tools are called; any other backend is used as
    it is.

    The embedded model (and a bare `LocalBackend`) samples greedily (temperature 0)
    unless `options` set a temperature: a 135M-parameter model follows the tool contract
    far more reliably that way. Options that leave the temperature unset (`max_tokens`
    alone, say) keep it.

    `resume` goes on from a logged conversation, as `parlay prompt -c` does: True for the
    latest, a log-session id (or a unique prefix of one), or a response id (an int) for
    the conversation as it was after that response. It is read from `log` when that is a
    `Store`, else from the default log (`Store.context`); `system` then replaces the
    logged system prompt. With `log`, the new turns join the logged conversation, or,
    resumed from an earlier response, are a fork of it (`parlay logs tree`).
    """
    if backend is not None and model is not None:
        raise ConfigurationError("start_session takes a backend or a model name, not both")
    if backend is None:
        options = greedy(options)
        backend = default_backend() if model is None else embedded_backend(model)
    elif _is_local(backend):
        # It has no tool calling of its own (and refuses tools): as the embedded model
        # runs when none is given, behind the engine and greedy.
        options = greedy(options)
        backend = embedded_stack(backend)
    session = session_class(
        backend,
        tools=tools,
        system=system if resume in (None, False) else None,
        chain_limit=chain_limit,
        log=log,
        options=options,
    )
    if resume not in (None, False):
        store = log if isinstance(log, Store) else Store()
        resume_into(session, store, None if resume is True else resume, system)
    return session


def resume_into(
    session: Session, store: Store, key: str | int | None, system: str | None = None
) -> None:
    """Give `session` the logged conversation `key` as its context (see `start_session`);
    its recorder, if any, goes on with that log session, or forks it at a response that
    is not the conversation's last."""
    from parlay.store.conversation import find, rebuild_context

    conversation = find(store, key)
    recorder = session.log

    def noted(answer: ModelOutputThunk[Any], row: LoggedResponse) -> None:
        if recorder is not None and row.id is not None:
            recorder.remember(answer, row.id, row.session_id)

    session.ctx = rebuild_context(conversation, system, noted)
    if recorder is None:
        return
    logged = conversation.session
    latest = store.responses(session_id=logged.id, limit=1)
    own = conversation.responses
    if isinstance(key, int) and latest and own and latest[0].id != own[-1].id:
        recorder.session = recorder.forked(session.ctx).session
    else:  # the new turns join the conversation, as `-c` does
        recorder.session = evolve(
            recorder.session,
            id=logged.id,
            parent_id=logged.parent_id,
            parent_response_id=logged.parent_response_id,
        )
