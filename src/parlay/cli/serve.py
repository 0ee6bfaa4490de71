"""`parlay serve`: the OpenAI- and Anthropic-compatible proxy on uvicorn."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

import typer

from parlay.cli.engine_options import (
    ActionFormatOpt,
    ContextWindowOpt,
    CtxOpt,
    ImagesOpt,
    MaxRetriesOpt,
    MinCallConfidenceOpt,
    RuleOffOpt,
    ThreadsOpt,
)
from parlay.cli.serve_options import (
    BodyTimeoutOpt,
    ClientKeyOpt,
    HeaderTimeoutOpt,
    HostOpt,
    LogLevelOpt,
    MaxBodyBytesOpt,
    MetricsOpt,
    ModelOpt,
    PortOpt,
    ServeLogOpt,
    TimeoutOpt,
    ToolsOpt,
    UpstreamKeyOpt,
    UpstreamKindOpt,
    UpstreamModelOpt,
    UpstreamUrlOpt,
    WorkersOpt,
)
from parlay.errors import ConfigurationError

if TYPE_CHECKING:
    from parlay.server.config import ServerConfig


def serve(
    upstream_url: UpstreamUrlOpt = None,
    upstream_kind: UpstreamKindOpt = None,
    upstream_key: UpstreamKeyOpt = None,
    upstream_model: UpstreamModelOpt = None,
    tools: ToolsOpt = None,
    model: ModelOpt = None,
    client_key: ClientKeyOpt = None,
    host: HostOpt = None,
    port: PortOpt = None,
    timeout: TimeoutOpt = None,
    action_format: ActionFormatOpt = None,
    max_retries: MaxRetriesOpt = None,
    min_call_confidence: MinCallConfidenceOpt = None,
    rule_off: RuleOffOpt = None,
    images: ImagesOpt = None,
    workers: WorkersOpt = None,
    max_body_bytes: MaxBodyBytesOpt = None,
    header_timeout: HeaderTimeoutOpt = None,
    body_timeout: BodyTimeoutOpt = None,
    threads: ThreadsOpt = None,
    ctx: CtxOpt = None,
    context_window: ContextWindowOpt = None,
    log: ServeLogOpt = None,
    metrics: MetricsOpt = None,
    log_level: LogLevelOpt = "info",
) -> None:
    """Serve OpenAI chat completions and Anthropic messages, with tools, before any model.

    With no --upstream-url it serves the embedded model through the prompt-contract engine.
    Each engine option may also come from the environment: PARLAY_SERVE_ACTION_FORMAT,
    _MAX_RETRIES, _MIN_CALL_CONFIDENCE, _RULES_OFF (comma-separated), _IMAGES; and
    --context-window from PARLAY_SERVE_CONTEXT_WINDOW.
    """
    flags = dict(locals())  # first: every flag, and nothing else
    from parlay.server.run import serve as run

    try:
        config = config_from_flags(flags)
        typer.echo(f"parlay serve: {startup_line(config)}", err=True)
        parlay_logging(log_level)
        if config.upstream_url is not None:
            typer.echo(f"parlay serve: {upstream_window_line(config)}", err=True)
        share_metrics_between_workers(config)
        run(config, log_level=log_level)
    except ConfigurationError as exc:
        typer.echo(f"parlay serve: {exc}", err=True)
        raise typer.Exit(2) from exc


# Flags whose `ServerConfig` field is named otherwise (a repeatable flag names one item).
RENAMED = {"model": "models", "client_key": "client_keys", "rule_off": "rules_off"}


def config_from_flags(flags: dict[str, Any]) -> ServerConfig:
    """The settings `serve`'s flags give, over `PARLAY_SERVE_*`."""
    from parlay.server.config import ServerConfig

    values: dict[str, object] = {
        RENAMED.get(name, name): tuple(value) if isinstance(value, list) else value
        for name, value in flags.items()
        if name != "log_level"
    }
    return ServerConfig.from_env(None, **values)


def share_metrics_between_workers(config: ServerConfig) -> None:
    """Worker processes add their metrics up in files of one folder (prometheus-client's
    multiprocess mode), named before they start."""
    from parlay.server.metrics import MULTIPROC_ENV

    if config.metrics and config.workers > 1 and not os.environ.get(MULTIPROC_ENV):
        folder = os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="parlay-metrics-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)


def parlay_logging(level: str) -> None:
    """`--log-level` for parlay's own loggers (`parlay.*`: the engine's decisions, what
    was shrunk to fit, a model server's error body, masked) as well as uvicorn's, which
    is all uvicorn's own configuration reaches."""
    logger = logging.getLogger("parlay")
    logger.setLevel("DEBUG" if level.lower() == "trace" else level.upper())
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)-9s %(name)s: %(message)s"))
        logger.addHandler(handler)


def upstream_window_line(config: ServerConfig) -> str:
    """The upstream model's context window and where it was found, asked now (once)."""
    from parlay.backends.window import context_window
    from parlay.server.config import build_backend

    backend: object = build_backend(config)
    for _ in range(4):  # through the engine and greedy sampling to the model itself
        backend = getattr(backend, "inner", backend)
    window = asyncio.run(context_window(backend))
    if window is None:
        return (
            "context window: the upstream did not say (requests go unfitted; its own "
            "overflow error reaches clients as theirs)"
        )
    return f"context window: {window.tokens:,} tokens (from {window.source})"


def startup_line(config: ServerConfig) -> str:
    """Where it listens and what answers there (the embedded model is named, not loaded)."""
    plural = f", {config.workers} workers" if config.workers > 1 else ""
    where = f"http://{config.host}:{config.port}"
    if config.upstream_url is None:
        from parlay.server.embedded import describe_embedded

        return f"{where} -> {describe_embedded(config.threads)}{plural}{_logged(config)}"
    if config.tools == "prompted":
        mode = "plain-chat upstream through the prompt-contract engine"
    else:
        mode = "native tools passed through"
    return f"{where} -> {config.upstream_url} ({mode}{plural}){_logged(config)}"


def _logged(config: ServerConfig) -> str:
    """Where the turns are logged (a database's password masked), and the metrics."""
    from parlay.store.postgres_db import masked

    logged = f"; log: {masked(config.log)}" if config.log else ""
    return logged + ("; metrics at /metrics" if config.metrics else "")
