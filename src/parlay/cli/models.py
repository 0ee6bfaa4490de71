"""`-m/--model`: from what the user typed to a backend.

- nothing, `embedded` or `local`: the embedded model (`parlay.start.default_backend`);
- an embedded model's short name (`smollm2`, `qwen2.5-coder`; `parlay models` lists
  them): that model on the embedded runtime, behind the engine;
- a path to a `.gguf` file: that file on the embedded llama.cpp runtime;
- `http(s)://host/v1` or `NAME@http(s)://host/v1`: an OpenAI-compatible server;
- `openai:NAME`: OpenAI (`$OPENAI_BASE_URL`, `$OPENAI_API_KEY`);
- `anthropic:NAME`: Anthropic's Messages API (`$ANTHROPIC_BASE_URL`, `$ANTHROPIC_API_KEY`).

`--prompted` puts any of them behind the prompted tool-calling engine (for a server
whose model has no native tool calling); any engine setting (`--action-format`,
`--rule-off`, ...) implies it. `--ctx` is an embedded model's window, `--context-window`
a server's.
"""

from __future__ import annotations

from pathlib import Path

from parlay.backends.base import PLAIN_CHAT, Backend, Capabilities
from parlay.backends.catalogue import embedded_model
from parlay.engine.backend import behind_engine
from parlay.engine.config import EngineChanges
from parlay.errors import ConfigurationError

EMBEDDED = ("", "embedded", "local", "default")
MODEL_HELP = (
    "The model: 'embedded' (default), an embedded model's name (smollm2, qwen2.5-coder), "
    "a .gguf file, an OpenAI-compatible URL "
    "(http://host:port/v1 or NAME@http://host:port/v1), 'openai:NAME' or 'anthropic:NAME'."
)


def resolve_model(
    spec: str | None,
    *,
    use_prompted: bool = False,
    engine: EngineChanges = EngineChanges(),  # noqa: B008 (frozen)
    threads: int | None = None,
    n_ctx: int | None = None,
    context_window: int | None = None,
) -> Backend:
    """The backend for a `-m` value (see the module docstring). Any `engine` setting
    implies `use_prompted`; `threads` and the window `n_ctx` go to an embedded model (None:
    the cores free at start; the window the model was trained for), `context_window` to
    a server's (None: asked of it)."""
    text = (spec or "").strip()
    use_prompted = use_prompted or bool(engine.given())
    _check_windows(text, context_window)
    backend: Backend
    if text.lower() in EMBEDDED:
        from parlay.start import default_backend

        backend = default_backend(threads=threads, n_ctx=n_ctx)
        # default_backend already puts a plain-chat model behind the engine;
        # `behind_engine` then only changes its settings.
        return behind_engine(backend, engine) if use_prompted else backend
    if embedded_model(text) is not None:
        from parlay.start import embedded_backend

        backend = embedded_backend(text, threads=threads, n_ctx=n_ctx)
        return behind_engine(backend, engine) if use_prompted else backend
    if text.lower().endswith(".gguf") and "://" not in text:  # a URL is a server's
        from parlay.backends.local import LocalBackend

        if not Path(text).expanduser().is_file():
            raise ConfigurationError(f"-m {text!r}: no such model file")
        backend = LocalBackend(Path(text).expanduser(), threads=threads, n_ctx=n_ctx)
        use_prompted = True  # llama.cpp with a plain chat template has no tool calling
    else:
        backend = _served(text, use_prompted, context_window)
    return behind_engine(backend, engine) if use_prompted else backend


def _served(text: str, use_prompted: bool, context_window: int | None) -> Backend:
    """The backend of a model a server runs: an OpenAI-compatible URL, OpenAI's, Anthropic's."""
    if "://" in text:
        from parlay.backends.openai import OpenAIBackend

        name, _, url = text.partition("@") if "@" in text.split("://", 1)[0] else ("", "", text)
        caps = PLAIN_CHAT if use_prompted else Capabilities(native_tools=True, json_schema=True)
        return OpenAIBackend(
            name or None, base_url=url, capabilities=caps, context_window=context_window
        )
    if text.startswith("openai:"):
        from parlay.backends.openai import OpenAIBackend

        return OpenAIBackend(text.removeprefix("openai:") or None, context_window=context_window)
    if text.startswith("anthropic"):
        from parlay.backends.anthropic import AnthropicBackend

        name = text.removeprefix("anthropic").removeprefix(":")
        if not name:
            raise ConfigurationError(
                "-m anthropic needs a model name: -m anthropic:claude-sonnet-4-5 (say)"
            )
        return AnthropicBackend(name, context_window=context_window)
    raise ConfigurationError(f"-m {text!r} is not understood. {MODEL_HELP}")


def _embedded(text: str) -> bool:
    return text.lower() in EMBEDDED or text.lower().endswith(".gguf") or bool(embedded_model(text))


def _check_windows(text: str, context_window: int | None) -> None:
    """`--context-window` only for a server, as `parlay serve` refuses it. (`--ctx` is
    not refused for a server: it may come from `$PARLAY_CTX`, set for the embedded model.)"""
    if context_window is not None and _embedded(text):
        raise ConfigurationError(
            "--context-window is a server's window; an embedded model's is --ctx"
        )
