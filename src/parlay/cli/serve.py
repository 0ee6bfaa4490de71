"""`parlay serve`: the OpenAI- and Anthropic-compatible proxy on uvicorn."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

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
    ModelOpt,
    PortOpt,
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
    log_level: LogLevelOpt = "info",
) -> None:
    """Serve OpenAI chat completions and Anthropic messages, with tools, before any model.

    With no --upstream-url it serves the embedded model through the prompt-contract engine.
    Each engine option may also come from the environment: PARLAY_SERVE_ACTION_FORMAT,
    _MAX_RETRIES, _MIN_CALL_CONFIDENCE, _RULES_OFF (comma-separated), _IMAGES; and
    --context-window from PARLAY_SERVE_CONTEXT_WINDOW.
    """
    from parlay.server.config import ServerConfig
    from parlay.server.run import serve as run

    try:
        config = ServerConfig.from_env(
            upstream_url=upstream_url,
            upstream_kind=upstream_kind,
            upstream_key=upstream_key,
            upstream_model=upstream_model,
            tools=tools,
            models=tuple(model or ()),
            client_keys=tuple(client_key or ()),
            host=host,
            port=port,
            timeout=timeout,
            action_format=action_format,
            max_retries=max_retries,
            min_call_confidence=min_call_confidence,
            rules_off=tuple(rule_off or ()),
            images=images,
            workers=workers,
            max_body_bytes=max_body_bytes,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            threads=threads,
            ctx=ctx,
            context_window=context_window,
        )
    except ConfigurationError as exc:
        typer.echo(f"parlay serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        typer.echo(f"parlay serve: {startup_line(config)}", err=True)
        parlay_logging(log_level)
        if config.upstream_url is not None:
            typer.echo(f"parlay serve: {upstream_window_line(config)}", err=True)
        run(config, log_level=log_level)
    except ConfigurationError as exc:
        typer.echo(f"parlay serve: {exc}", err=True)
        raise typer.Exit(2) from exc


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

        return f"{where} -> {describe_embedded(config.threads)}{plural}"
    if config.tools == "prompted":
        mode = "plain-chat upstream through the prompt-contract engine"
    else:
        mode = "native tools passed through"
    return f"{where} -> {config.upstream_url} ({mode}{plural})"
