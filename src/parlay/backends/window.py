"""How many tokens a model can read at once, and where parlay learned it.

The embedded model's window is its setting (`n_ctx=`, `--ctx`, `$PARLAY_CTX`), by default
the window the model was trained for, read from its GGUF file. An upstream is asked once
(`ask_upstream`): llama.cpp's `/props`, vLLM's `/v1/models`, LM Studio's `/api/v0/models`,
Ollama's `/api/show`; `--context-window` (or `OpenAIBackend(context_window=)`) says it
instead. A backend that knows has `async context_window() -> ContextWindow | None`.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from attrs import frozen

from parlay.errors import SHAPE_ERRORS, BackendError, ConfigurationError, ContextWindowExceeded

logger = logging.getLogger("parlay.window")

# Ollama's OpenAI endpoint runs a model at its `num_ctx` parameter, else at the server's
# default (4096 on machines like these); a request cannot raise it.
OLLAMA_DEFAULT_CTX = 4096


@frozen
class ContextWindow:
    """A window in tokens, and where it was found (words for the start-up line)."""

    tokens: int
    source: str


@runtime_checkable
class WindowAware(Protocol):
    """A backend that knows its model's context window (or None when it cannot tell)."""

    async def context_window(self) -> ContextWindow | None: ...


async def context_window(backend: object) -> ContextWindow | None:
    """`backend`'s window where it knows it, else None."""
    if isinstance(backend, WindowAware):
        return await backend.context_window()
    return None


# -- the embedded model: the GGUF file's own metadata ----------------------------------
_GGUF_MAGIC = b"GGUF"
# GGUF value types (gguf.md): the fixed-size ones by their struct format.
_SCALARS = {
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"
}  # fmt: skip
_STRING, _ARRAY = 8, 9
# Metadata past this many keys is not read: the architecture's keys come first.
_MAX_KEYS = 4096


def trained_window(model_path: str | Path) -> int | None:
    """The context the model was trained for (`<arch>.context_length` in its GGUF header),
    None when the file does not say or is not a GGUF file."""
    try:
        with open(model_path, "rb") as f:
            return _context_length(f)
    except (OSError, ValueError, struct.error) as exc:
        logger.debug("no context length read from %s: %s", model_path, exc)
        return None


def _context_length(f: BinaryIO) -> int | None:
    if f.read(4) != _GGUF_MAGIC:
        raise ValueError("not a GGUF file")
    _version, _tensors, keys = struct.unpack("<IQQ", f.read(20))
    for _ in range(min(keys, _MAX_KEYS)):
        key = _string(f)
        (kind,) = struct.unpack("<I", f.read(4))
        value = _value(f, kind)
        if key.endswith(".context_length") and isinstance(value, int):
            return value
    return None


def _string(f: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", f.read(8))
    return f.read(size).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int) -> object:
    """One metadata value; an array is skipped (a vocabulary holds thousands of them)."""
    if kind in _SCALARS:
        fmt = "<" + _SCALARS[kind]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, count = struct.unpack("<IQ", f.read(12))
        if item in _SCALARS:
            f.seek(struct.calcsize("<" + _SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(f, item)
        return None
    raise ValueError(f"unknown GGUF value type {kind}")


# The largest window the embedded model gets by default: its KV cache is allocated whole
# at start (Qwen2.5-Coder-0.5B at 32,768: 384 MiB of f16 cache; SmolLM2 at 8,192: 180 MiB).
MAX_DEFAULT_CTX = 32768
# When the model file does not say.
FALLBACK_CTX = 4096


def embedded_window(n_ctx: int | None, model_path: str | Path) -> ContextWindow:
    """The embedded model's window: `n_ctx` if given, else `$PARLAY_CTX`, else the
    model's trained window (at most `MAX_DEFAULT_CTX`), else `FALLBACK_CTX`."""
    if n_ctx is not None:
        return ContextWindow(_positive(n_ctx, "n_ctx"), "set")
    chosen = os.environ.get("PARLAY_CTX", "").strip()
    if chosen:
        if not chosen.isdigit():
            raise ConfigurationError(f"$PARLAY_CTX must be a number of tokens, got {chosen!r}")
        return ContextWindow(_positive(int(chosen), "$PARLAY_CTX"), "$PARLAY_CTX")
    trained = trained_window(model_path)
    if trained is None:
        return ContextWindow(FALLBACK_CTX, "parlay's default (the model file does not say)")
    if trained > MAX_DEFAULT_CTX:
        return ContextWindow(MAX_DEFAULT_CTX, f"parlay's cap (the model's own: {trained})")
    return ContextWindow(trained, "the model file's context_length")


def _positive(tokens: int, name: str) -> int:
    if tokens < 256:
        raise ConfigurationError(f"{name} must be at least 256 tokens, got {tokens}")
    return tokens


# -- an upstream: asked once ------------------------------------------------------------
class JsonGetter(Protocol):
    async def get_json(self, path: str) -> Any: ...

    async def post_json(self, path: str, body: Mapping[str, Any]) -> Any: ...


async def ask_upstream(http: JsonGetter, base_url: str, model: str | None) -> ContextWindow | None:
    """The upstream's window, from the first of the servers' own endpoints that tells it;
    None when none does (parlay then sends requests unfitted, and maps the upstream's own
    overflow error)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    for ask in (_llama_cpp, _vllm, _lm_studio, _ollama):
        try:
            found = await ask(http, root, model)
        except (BackendError, *SHAPE_ERRORS):  # an answer of another shape tells nothing
            continue
        if found is not None:
            return found
    return None


async def _llama_cpp(http: JsonGetter, root: str, model: str | None) -> ContextWindow | None:
    props = await http.get_json(f"{root}/props")
    n_ctx = props["default_generation_settings"]["n_ctx"]
    return ContextWindow(int(n_ctx), "llama.cpp /props") if n_ctx else None


def _listed(listing: Any, model: str | None, field: str) -> int | None:
    """`field` of the listed model named `model` (or of the only one listed)."""
    data = listing["data"]
    entries = [m for m in data if isinstance(m, dict) and field in m]
    named = [m for m in entries if model is not None and m.get("id") == model]
    chosen = named or (entries if len(entries) == 1 else [])
    return int(chosen[0][field]) if chosen else None


async def _vllm(http: JsonGetter, root: str, model: str | None) -> ContextWindow | None:
    found = _listed(await http.get_json(f"{root}/v1/models"), model, "max_model_len")
    return ContextWindow(found, "/v1/models max_model_len") if found else None


async def _lm_studio(http: JsonGetter, root: str, model: str | None) -> ContextWindow | None:
    found = _listed(await http.get_json(f"{root}/api/v0/models"), model, "max_context_length")
    return ContextWindow(found, "LM Studio /api/v0/models") if found else None


async def _ollama(http: JsonGetter, root: str, model: str | None) -> ContextWindow | None:
    if model is None:
        return None
    shown = await http.post_json(f"{root}/api/show", {"model": model})
    info = shown.get("model_info") or {}
    trained = next((int(v) for k, v in info.items() if k.endswith(".context_length")), None)
    num_ctx = _num_ctx(str(shown.get("parameters") or ""))
    if num_ctx is not None:
        return ContextWindow(num_ctx, "Ollama /api/show num_ctx")
    if trained is None:
        return None
    tokens = min(trained, OLLAMA_DEFAULT_CTX)
    return ContextWindow(tokens, f"Ollama's default num_ctx (the model's own: {trained})")


def _num_ctx(parameters: str) -> int | None:
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    return None


# -- a model server's own overflow error ------------------------------------------------
# How servers say a prompt is over the window: llama.cpp, vLLM and OpenAI, Anthropic.
_OVERFLOW = re.compile(
    r"(?i)exceeds? the available context size|exceed_context_size|maximum context length"
    r"|context_length_exceeded|prompt is too long|context window"
)
# (pattern, group of the prompt's tokens, group of the window)
_COUNTS = (
    (re.compile(r"\((\d+) tokens\) exceeds? the available context size \((\d+) tokens"), 1, 2),
    (re.compile(r"(?is)maximum context length is (\d+) tokens.*?(\d+) tokens"), 2, 1),
    (re.compile(r"(?i)prompt is too long: (\d+) tokens > (\d+)"), 1, 2),
)


def overflow_error(status: int, text: str) -> ContextWindowExceeded | None:
    """A model server's 400 (or 413) saying the prompt is over its window, as parlay's
    own overflow error with the server's counts where it gave them; None otherwise."""
    if status not in (400, 413) or not _OVERFLOW.search(text):
        return None
    for pattern, tokens_at, window_at in _COUNTS:
        if found := pattern.search(text):
            tokens, window = int(found.group(tokens_at)), int(found.group(window_at))
            message = (
                f"prompt is too long: {tokens} tokens > {window} maximum "
                "(the model server's own count)"
            )
            return ContextWindowExceeded(message, tokens=tokens, window=window, detail=text)
    message = "prompt is too long for the model's context window (the model server said so)"
    return ContextWindowExceeded(message, tokens=None, window=None, detail=text)
