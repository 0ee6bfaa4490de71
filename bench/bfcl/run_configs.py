"""The configurations `bench.bfcl.run` compares, and the backend each one asks through.

A configuration is llama.cpp's own tool support (`tools` sent natively), or parlay's
prompted engine with one action format, free or held to a grammar.
"""

from __future__ import annotations

from attrs import frozen

from bench.bfcl.models import Model
from parlay.backends.base import PLAIN_CHAT, Backend, Capabilities
from parlay.backends.local import LlamaServer
from parlay.backends.openai import OpenAIBackend
from parlay.engine.backend import PromptedBackend

NATIVE = Capabilities(native_tools=True, json_schema=True)


@frozen
class Config:
    """One way of asking: llama.cpp's own tools, or the engine with a format."""

    key: str
    action_format: str | None = None
    constrained: bool | None = None
    # PromptedBackend's call confidence; None: what parlay ships for the model.
    min_call_confidence: float | None = None

    @property
    def native(self) -> bool:
        return self.action_format is None


NATIVE_CONFIG = Config("llama.cpp native tools")


def engine_formats() -> tuple[str, ...]:
    """The action formats the prompted engine offers."""
    from parlay.engine.contract.pieces import FORMATS

    return tuple(FORMATS)


def engine_config(
    action_format: str, constrained: bool, min_call_confidence: float | None = None
) -> Config:
    mode = "constrained" if constrained else "free"
    key = f"parlay {action_format} {mode}"
    if min_call_confidence is not None:
        key += f", min_call_confidence {min_call_confidence:g}"
    return Config(key, action_format, constrained, min_call_confidence)


def make_backend(config: Config, server: LlamaServer, model: Model) -> Backend:
    if config.action_format is None:
        return OpenAIBackend(model.key, base_url=server.base_url, api_key="", capabilities=NATIVE)
    inner = OpenAIBackend(model.key, base_url=server.base_url, api_key="", capabilities=PLAIN_CHAT)
    backend = PromptedBackend(
        inner, action_format=config.action_format, constrained=config.constrained
    )
    share = config.min_call_confidence
    if share is None:
        share = model.min_call_confidence
    if share is not None:
        backend = backend.configure(min_call_confidence=share)
    return backend


def configs_from(spec: str) -> list[Config]:
    formats = engine_formats()
    engine = [engine_config(f, c) for f in formats for c in (False, True)]
    if spec == "all":
        return [NATIVE_CONFIG, *engine]
    if spec == "engine":
        return engine
    out = []
    for item in spec.split(","):
        if item == "native":
            out.append(NATIVE_CONFIG)
        else:
            name, _, rest = item.partition(":")
            mode, _, share = rest.partition("@")
            if mode not in ("free", "constrained"):
                raise SystemExit(f"config {item!r}: write FORMAT:free or FORMAT:constrained")
            out.append(engine_config(name, mode == "constrained", float(share) if share else None))
    return out
