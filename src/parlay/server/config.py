"""The proxy's settings, from flags or the environment, and the backend they describe."""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from attrs import field, frozen

from parlay.backends.base import Backend, Capabilities
from parlay.engine.backend import behind_engine
from parlay.engine.config import EngineChanges
from parlay.errors import ConfigurationError
from parlay.server.slow_clients import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT

if TYPE_CHECKING:
    from parlay.backends.anthropic import AnthropicBackend
    from parlay.backends.openai import OpenAIBackend

UpstreamKind = Literal["openai", "anthropic"]
ToolMode = Literal["prompted", "native"]

ENV_PREFIX = "PARLAY_SERVE_"
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# `from_env`'s names that are the engine's (`EngineChanges`), as flags and variables.
ENGINE_FIELDS = ("action_format", "max_retries", "min_call_confidence", "rules_off", "images")


def _names(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)  # type: ignore[attr-defined]


def _engine(value: EngineChanges | Mapping[str, Any]) -> EngineChanges:
    """The engine's settings, or their fields (as `attrs.asdict` gives them to the
    worker processes of `--workers N`, `server.run`)."""
    return value if isinstance(value, EngineChanges) else EngineChanges(**value)


@frozen
class ServerConfig:
    """Everything `parlay serve` needs; the app itself keeps no other state.

    `models` are the names clients may ask for (empty: any name); requests go to the
    upstream's own `upstream_model` whatever name the client used. `client_keys` are the
    keys clients must present (`Authorization: Bearer` or `x-api-key`); none means open,
    which is only allowed on a loopback address.
    """

    # None: no upstream, the embedded model (`parlay.start.default_backend`).
    upstream_url: str | None = None
    upstream_kind: UpstreamKind = "openai"
    upstream_key: str | None = None
    upstream_model: str | None = None
    tools: ToolMode = "prompted"
    models: tuple[str, ...] = field(default=(), converter=_names)
    client_keys: tuple[str, ...] = field(default=(), converter=_names)
    host: str = "127.0.0.1"
    port: int = 8000
    timeout: float = 300.0
    stream_upstream: bool = True
    # Prompt-contract engine settings, on top of the backend's own (each checked there).
    engine: EngineChanges = field(factory=EngineChanges, converter=_engine)
    # Serving: worker processes (the proxy is stateless, so any worker may answer any
    # turn) and the largest request body accepted (413 beyond).
    workers: int = 1
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # The embedded model's llama.cpp threads (None: $PARLAY_THREADS, else the cores free).
    threads: int | None = None
    # The embedded model's window (None: $PARLAY_CTX, else the one it was trained for).
    ctx: int | None = None
    # An upstream's window in tokens (None: asked of the upstream once).
    context_window: int | None = None
    # Seconds a client has to send a request's line and headers (`server.slow_clients`).
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    # Seconds a client has to send a request's whole body once its head is read (408).
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    # Where every answered request is logged (a SQLite file or a postgresql:// URL; None:
    # not logged), and whether `GET /metrics` is served.
    log: str | None = None
    metrics: bool = False

    def __attrs_post_init__(self) -> None:
        self._check_modes()
        self._check_limits()
        self._check_access()
        self._check_observing()

    def _check_modes(self) -> None:
        if self.upstream_kind not in ("openai", "anthropic"):
            raise ConfigurationError(
                f"upstream kind {self.upstream_kind!r} is not openai or anthropic"
            )
        if self.tools not in ("prompted", "native"):
            raise ConfigurationError(f"tool mode {self.tools!r} is not prompted or native")
        if self.threads is not None and self.threads < 1:
            raise ConfigurationError(f"--threads must be at least 1, got {self.threads}")
        if self.upstream_url is None and (self.upstream_model or self.upstream_key):
            raise ConfigurationError(
                "--upstream-model and --upstream-key need --upstream-url; without one, "
                "parlay serve serves the embedded model"
            )
        if self.upstream_url is None and self.tools == "native":
            raise ConfigurationError(
                "--tools native needs an --upstream-url with tools of its own; the embedded "
                "model has none, so it is served through the prompt-contract engine"
            )

    def _check_limits(self) -> None:
        if not 1 <= self.port <= 65535:
            raise ConfigurationError(f"--port must be 1 to 65535, got {self.port}")
        if self.workers < 1:
            raise ConfigurationError(f"--workers must be at least 1, got {self.workers}")
        if self.upstream_url is None and self.workers > 1:
            # Each worker is a process of its own and would load its own copy of the
            # model, each copy taking the cores the others use.
            raise ConfigurationError(
                f"--workers {self.workers} would load the embedded model {self.workers} "
                "times, each copy on the same cores: serve it with one worker (its llama.cpp "
                "server answers requests side by side), or start a llama.cpp server and give "
                "it as --upstream-url"
            )
        if self.max_body_bytes < 1024:
            raise ConfigurationError(
                f"--max-body-bytes must be at least 1024, got {self.max_body_bytes}"
            )
        for flag, seconds in (
            ("--header-timeout", self.header_timeout),
            ("--body-timeout", self.body_timeout),
        ):
            if not math.isfinite(seconds) or seconds <= 0:
                raise ConfigurationError(f"{flag} must be positive seconds, got {seconds}")
        self._check_windows()

    def _check_windows(self) -> None:
        for flag, tokens in (("--ctx", self.ctx), ("--context-window", self.context_window)):
            if tokens is not None and tokens < 256:
                raise ConfigurationError(f"{flag} must be at least 256 tokens, got {tokens}")
        if self.ctx is not None and self.upstream_url is not None:
            raise ConfigurationError(
                "--ctx sets the embedded model's window; for an upstream's, say "
                "--context-window (or let parlay ask the upstream)"
            )
        if self.context_window is not None and self.upstream_url is None:
            raise ConfigurationError(
                "--context-window is an upstream's window; the embedded model's is --ctx"
            )

    def _check_access(self) -> None:
        if any(not key.strip() for key in self.client_keys):
            raise ConfigurationError(
                "--client-key is empty: no client could present it, so every request "
                "would be refused; pass a non-empty key, or none to serve 127.0.0.1 openly"
            )
        if not self.client_keys and not is_loopback(self.host):
            raise ConfigurationError(
                f"refusing to serve on {self.host} without a client key: anyone who can reach "
                "it could spend the upstream; pass --client-key (or PARLAY_SERVE_CLIENT_KEYS) "
                "or bind 127.0.0.1"
            )

    def _check_observing(self) -> None:
        """What `--metrics` and a PostgreSQL `--log` need is installed (their extras)."""
        from parlay.store.postgres_db import is_postgres_url

        needs = []
        if self.metrics and importlib.util.find_spec("prometheus_client") is None:
            needs.append(("--metrics", "prometheus-client", "metrics"))
        if is_postgres_url(self.log) and importlib.util.find_spec("psycopg_pool") is None:
            needs.append(("a PostgreSQL --log", "psycopg and psycopg-pool", "postgres"))
        if needs:
            what, packages, extra = needs[0]
            raise ConfigurationError(
                f"{what} needs {packages}: pip install '.[{extra}]' in parlay's folder"
            )

    def observing(self) -> dict[str, Any]:
        """`create_app`'s arguments for the log and the metrics."""
        from parlay.store import Store

        return {"metrics": self.metrics, "log": Store(self.log) if self.log else None}

    @property
    def advertised_models(self) -> tuple[str, ...]:
        return self.models or (self.upstream_model or "parlay",)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> ServerConfig:
        """Settings from `PARLAY_SERVE_*` variables, then `overrides` (flags) on top.

        Overrides that are None are ignored, so unset flags fall back to the environment.
        """
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, key in (
            ("upstream_url", "UPSTREAM_URL"),
            ("upstream_kind", "UPSTREAM_KIND"),
            ("upstream_key", "UPSTREAM_KEY"),
            ("upstream_model", "UPSTREAM_MODEL"),
            ("tools", "TOOLS"),
            ("models", "MODELS"),
            ("client_keys", "CLIENT_KEYS"),
            ("host", "HOST"),
            ("rules_off", "RULES_OFF"),
            ("action_format", "ACTION_FORMAT"),
            ("images", "IMAGES"),
            ("log", "LOG"),
        ):
            if env.get(ENV_PREFIX + key):
                values[name] = env[ENV_PREFIX + key]
        for name, key, kind in (
            ("port", "PORT", int),
            ("timeout", "TIMEOUT", float),
            ("max_retries", "MAX_RETRIES", int),
            ("min_call_confidence", "MIN_CALL_CONFIDENCE", float),
            ("workers", "WORKERS", int),
            ("max_body_bytes", "MAX_BODY_BYTES", int),
            ("header_timeout", "HEADER_TIMEOUT", float),
            ("body_timeout", "BODY_TIMEOUT", float),
            ("context_window", "CONTEXT_WINDOW", int),
        ):
            if env.get(ENV_PREFIX + key):
                try:
                    values[name] = kind(env[ENV_PREFIX + key])
                except ValueError as exc:
                    raise ConfigurationError(
                        f"{ENV_PREFIX + key}={env[ENV_PREFIX + key]!r} is not a number"
                    ) from exc
        if env.get(ENV_PREFIX + "METRICS"):
            values["metrics"] = _switch(ENV_PREFIX + "METRICS", env[ENV_PREFIX + "METRICS"])
        values.update({k: v for k, v in overrides.items() if v is not None and v != ()})
        # The engine's settings from either, as one value (flags over the environment).
        engine = {name: values.pop(name) for name in ENGINE_FIELDS if name in values}
        return cls(**values, engine=EngineChanges(**engine))  # type: ignore[arg-type]


def _switch(name: str, value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name}={value!r} is not 1 or 0 (true or false)")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_backend(config: ServerConfig) -> Backend:
    """The backend the proxy serves: the upstream, through the prompt engine if asked;
    with no upstream, the embedded model as `start_session()` runs it."""
    if config.upstream_url is None:
        from parlay.server.embedded import embedded_backend

        return embedded_backend(config.threads, config.ctx, config.engine)
    native = config.tools == "native"
    caps = Capabilities(native_tools=native, json_schema=config.upstream_kind == "openai")
    backend_class: type[AnthropicBackend] | type[OpenAIBackend]
    if config.upstream_kind == "anthropic":
        from parlay.backends.anthropic import AnthropicBackend

        backend_class = AnthropicBackend
    else:
        from parlay.backends.openai import OpenAIBackend

        backend_class = OpenAIBackend
    inner: Backend = backend_class(
        config.upstream_model,
        base_url=config.upstream_url,
        api_key=config.upstream_key or "",
        capabilities=caps,
        stream=config.stream_upstream,
        timeout=config.timeout,
        context_window=config.context_window,
    )
    if native:
        return inner
    return behind_engine(inner, config.engine)
