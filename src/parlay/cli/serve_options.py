"""The options of `parlay serve`, each with its help and its environment variable
(read by `ServerConfig.from_env`, so the flag and the variable say the same thing). The
engine's, the window's and the threads' are `parlay prompt`'s too: `cli.engine_options`."""

from __future__ import annotations

from typing import Annotated

import typer

UpstreamUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="Upstream base URL, e.g. http://127.0.0.1:8080/v1; none: serve the embedded "
        "model through the prompt-contract engine (env PARLAY_SERVE_UPSTREAM_URL)"
    ),
]

UpstreamKindOpt = Annotated[
    str | None,
    typer.Option(help="Upstream protocol: openai or anthropic (env PARLAY_SERVE_UPSTREAM_KIND)"),
]

UpstreamKeyOpt = Annotated[
    str | None,
    typer.Option(help="API key sent upstream (env PARLAY_SERVE_UPSTREAM_KEY)"),
]

UpstreamModelOpt = Annotated[
    str | None,
    typer.Option(help="Model name sent upstream (env PARLAY_SERVE_UPSTREAM_MODEL)"),
]

ToolsOpt = Annotated[
    str | None,
    typer.Option(
        help="prompted: run a plain-chat upstream through the prompt-contract engine; "
        "native: pass tools through to an upstream that has them (env PARLAY_SERVE_TOOLS)"
    ),
]

ModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        help="A model name clients may ask for (repeatable; default: any) "
        "(env PARLAY_SERVE_MODELS, comma-separated)",
    ),
]

ClientKeyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--client-key",
        help="A key clients must present (repeatable; required unless bound to loopback) "
        "(env PARLAY_SERVE_CLIENT_KEYS, comma-separated)",
    ),
]

HostOpt = Annotated[
    str | None, typer.Option(help="Address to bind (default 127.0.0.1) (env PARLAY_SERVE_HOST)")
]

PortOpt = Annotated[int | None, typer.Option(help="Port (default 8000) (env PARLAY_SERVE_PORT)")]

TimeoutOpt = Annotated[
    float | None,
    typer.Option(help="Seconds to wait for the upstream (default 300) (env PARLAY_SERVE_TIMEOUT)"),
]

WorkersOpt = Annotated[
    int | None,
    typer.Option(
        help="Worker processes (default 1); the proxy keeps no state, so any worker "
        "answers any request (env PARLAY_SERVE_WORKERS)"
    ),
]

MaxBodyBytesOpt = Annotated[
    int | None,
    typer.Option(
        help="Largest request body accepted, in bytes; larger ones get a 413 "
        "(default 8 MiB) (env PARLAY_SERVE_MAX_BODY_BYTES)"
    ),
]

HeaderTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        help="Seconds a client has to send a request's line and headers; then the "
        "connection is closed (default 10) (env PARLAY_SERVE_HEADER_TIMEOUT)"
    ),
]

BodyTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        help="Seconds a client has to send a request's whole body once its headers are "
        "in; then it gets a 408 and the connection is closed (default 10) "
        "(env PARLAY_SERVE_BODY_TIMEOUT)"
    ),
]

LogLevelOpt = Annotated[str, typer.Option(help="uvicorn log level")]

ServeLogOpt = Annotated[
    str | None,
    typer.Option(
        "--log",
        help="Log every answered request here: a SQLite file or a postgresql:// URL shared "
        "by every replica; `parlay logs` reads it with PARLAY_LOG_DB set the same "
        "(default: not logged) (env PARLAY_SERVE_LOG)",
    ),
]

MetricsOpt = Annotated[
    bool | None,
    typer.Option(
        "--metrics/--no-metrics",
        help="Serve GET /metrics in Prometheus' format (behind the client key when keys "
        "are set) (default off) (env PARLAY_SERVE_METRICS=1)",
    ),
]
