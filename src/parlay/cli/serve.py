"""`parlay serve`: the OpenAI- and Anthropic-compatible proxy on uvicorn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from parlay.errors import ConfigurationError

if TYPE_CHECKING:
    from parlay.server.config import ServerConfig


def serve(
    upstream_url: Annotated[
        str | None,
        typer.Option(
            help="Upstream base URL, e.g. http://127.0.0.1:8080/v1; none: serve the embedded "
            "model through the prompt-contract engine (env PARLAY_SERVE_UPSTREAM_URL)"
        ),
    ] = None,
    upstream_kind: Annotated[
        str | None,
        typer.Option(
            help="Upstream protocol: openai or anthropic (env PARLAY_SERVE_UPSTREAM_KIND)"
        ),
    ] = None,
    upstream_key: Annotated[
        str | None,
        typer.Option(help="API key sent upstream (env PARLAY_SERVE_UPSTREAM_KEY)"),
    ] = None,
    upstream_model: Annotated[
        str | None,
        typer.Option(help="Model name sent upstream (env PARLAY_SERVE_UPSTREAM_MODEL)"),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="prompted: run a plain-chat upstream through the prompt-contract engine; "
            "native: pass tools through to an upstream that has them (env PARLAY_SERVE_TOOLS)"
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="A model name clients may ask for (repeatable; default: any) "
            "(env PARLAY_SERVE_MODELS, comma-separated)",
        ),
    ] = None,
    client_key: Annotated[
        list[str] | None,
        typer.Option(
            "--client-key",
            help="A key clients must present (repeatable; required unless bound to loopback) "
            "(env PARLAY_SERVE_CLIENT_KEYS, comma-separated)",
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Address to bind (default 127.0.0.1) (env PARLAY_SERVE_HOST)")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port (default 8000) (env PARLAY_SERVE_PORT)")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds to wait for the upstream (default 300) (env PARLAY_SERVE_TIMEOUT)"
        ),
    ] = None,
    action_format: Annotated[
        str | None,
        typer.Option(
            help="Engine: how the model writes calls: fenced, json or command (default: "
            "json under a grammar for an OpenAI-compatible upstream, else fenced) "
            "(env PARLAY_SERVE_ACTION_FORMAT)"
        ),
    ] = None,
    max_retries: Annotated[
        int | None,
        typer.Option(
            help="Engine: retries when a call was expected (env PARLAY_SERVE_MAX_RETRIES)"
        ),
    ] = None,
    min_offered_share: Annotated[
        float | None,
        typer.Option(
            help="Engine: under tool_choice auto, a call is asked again as an answer when "
            "less than this share of the model's choices at a token of the tool's name go on "
            "to an offered tool (default 0.5; 0.1 suits a model as small as SmolLM2; 0: off) "
            "(env PARLAY_SERVE_MIN_OFFERED_SHARE)"
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Worker processes (default 1); the proxy keeps no state, so any worker "
            "answers any request (env PARLAY_SERVE_WORKERS)"
        ),
    ] = None,
    max_body_bytes: Annotated[
        int | None,
        typer.Option(
            help="Largest request body accepted, in bytes; larger ones get a 413 "
            "(default 8 MiB) (env PARLAY_SERVE_MAX_BODY_BYTES)"
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            envvar="PARLAY_THREADS",
            show_envvar=False,
            help="The embedded model's llama.cpp threads (default: the cores free when it "
            "loads) (env PARLAY_THREADS)",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Serve OpenAI chat completions and Anthropic messages, with tools, before any model.

    With no --upstream-url it serves the embedded model through the prompt-contract engine.
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
            min_offered_share=min_offered_share,
            workers=workers,
            max_body_bytes=max_body_bytes,
            threads=threads,
        )
    except ConfigurationError as exc:
        typer.echo(f"parlay serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        typer.echo(f"parlay serve: {startup_line(config)}", err=True)
        run(config, log_level=log_level)
    except ConfigurationError as exc:
        typer.echo(f"parlay serve: {exc}", err=True)
        raise typer.Exit(2) from exc


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
