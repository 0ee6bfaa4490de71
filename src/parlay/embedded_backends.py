"""The embedded models behind the engine, as parlay runs them: `start_session()` and
`Session.load` (`parlay.session_load`) both start them from here, so reopening a saved
session needs nothing of `parlay.start`, which imports the session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attrs import evolve

from parlay.backends.bounds import EMBEDDED_MAX_TOKENS
from parlay.errors import ConfigurationError
from parlay.request import GenerationOptions

if TYPE_CHECKING:
    from parlay.backends.base import Backend
    from parlay.backends.local import LocalBackend
    from parlay.engine.backend import PromptedBackend

# After a tool result, the restated request garbled SmolLM2's answer in the quick start
# ("Dec 2020-01-20 22:22:52..." for an order's status), and on the turn-after-a-result
# benchmark it cost SmolLM2 -9.2 points (-16.7 to -2.7; bench/bfcl/notes.md, stop 25).
EMBEDDED_RESTATE_REQUEST = False
# Its action format: json, where the engine's default under a grammar is typed. In the
# typed format, after a tool result, SmolLM2 called the tool again with the few-shot
# example's value instead of answering (examples/quickstart.py; typed broke the model
# tests on the chain limit), though on BFCL's first decisions typed was the same on
# balance for it, +0.4 (-8.6 to +9.7), with more calls well-formed (bench/bfcl/notes.md,
# stop 24).
EMBEDDED_ACTION_FORMAT = "json"
# `PromptedBackend.min_call_confidence` for it, set by the rule every model's is: the
# value with the best balanced score on the tune half of the development benchmark,
# derived from the model's first replies and a full run (bench/results/bfcl-knob.md).
EMBEDDED_MIN_CALL_CONFIDENCE = 0.5


def embedded_backend(name: str, *, threads: int | None = None, n_ctx: int | None = None) -> Backend:
    """The embedded model `name` (`parlay.backends.catalogue`: smollm2, qwen2.5-coder)
    behind the engine: SmolLM2 as `embedded_engine` sets it, any other with the engine's
    defaults and the embedded token budget (as `$PARLAY_LOCAL_MODEL` gets)."""
    from parlay.backends.catalogue import EMBEDDED_MODELS, embedded_model
    from parlay.backends.local import LocalBackend

    model = embedded_model(name)
    if model is None:
        known = ", ".join(m.name for m in EMBEDDED_MODELS)
        raise ConfigurationError(f"no embedded model is called {name!r}: there are {known}")
    return embedded_stack(LocalBackend(model.locate(), threads=threads, n_ctx=n_ctx))


def embedded_stack(local: LocalBackend) -> PromptedBackend:
    """`local` behind the engine as parlay runs each embedded model: SmolLM2 as
    `embedded_engine` sets it; any other file (`$PARLAY_LOCAL_MODEL`, Qwen) with the
    engine's defaults, each attempt with the embedded model's own budget rather than the
    engine's larger one."""
    from parlay.backends.catalogue import SMOLLM2_FILE
    from parlay.engine.backend import PromptedBackend

    if local.name == f"local:{SMOLLM2_FILE}":
        return embedded_engine(local)
    return PromptedBackend(local, max_tokens=EMBEDDED_MAX_TOKENS)


def embedded_engine(model: Backend) -> PromptedBackend:
    """The engine as the embedded SmolLM2-135M ships with it, in front of `model`.

    SmolLM2 has no tool support of its own: the prompt-contract engine gives it some. It
    writes the json format (see `EMBEDDED_ACTION_FORMAT`), calls when it is as sure as
    `EMBEDDED_MIN_CALL_CONFIDENCE`, and each attempt gets the embedded model's own budget.
    """
    from parlay.engine.backend import PromptedBackend

    return PromptedBackend(
        model,
        action_format=EMBEDDED_ACTION_FORMAT,
        min_call_confidence=EMBEDDED_MIN_CALL_CONFIDENCE,
        max_tokens=EMBEDDED_MAX_TOKENS,
        restate_request=EMBEDDED_RESTATE_REQUEST,
    )


def greedy(options: GenerationOptions | None) -> GenerationOptions:
    """`options` with temperature 0 where they set none (how the embedded model runs)."""
    if options is None:
        return GenerationOptions(temperature=0)
    return options if options.temperature is not None else evolve(options, temperature=0)


__all__ = [
    "EMBEDDED_ACTION_FORMAT",
    "EMBEDDED_MIN_CALL_CONFIDENCE",
    "EMBEDDED_RESTATE_REQUEST",
    "embedded_backend",
    "embedded_engine",
    "embedded_stack",
    "greedy",
]
