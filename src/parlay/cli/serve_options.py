"""The options of `parlay serve`, each with its help and its environment variable
(read by `ServerConfig.from_env`, so the flag and the variable say the same thing)."""

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

ActionFormatOpt = Annotated[
    str | None,
    typer.Option(
        help="Engine: how the model writes calls: fenced, json or typed (default: "
        "typed under a grammar for an OpenAI-compatible upstream, else fenced) "
        "(env PARLAY_SERVE_ACTION_FORMAT)"
    ),
]

MaxRetriesOpt = Annotated[
    int | None,
    typer.Option(help="Engine: retries when a call was expected (env PARLAY_SERVE_MAX_RETRIES)"),
]

MinCallConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--min-call-confidence",
        min=0.0,
        max=1.0,
        help="Engine: under tool_choice auto, a call goes out only when the model was at "
        "least this sure of calling and of the tool it names; else it is asked for words "
        "(default 0.7; 0 switches it off; env PARLAY_SERVE_MIN_CALL_CONFIDENCE)",
    ),
]

ImagesOpt = Annotated[
    str | None,
    typer.Option(
        help="Engine: an image for the text-only model: placeholder (a line saying an "
        "image was there and this model reads text only) or refuse (a 400); native mode "
        "passes images on (default placeholder) (env PARLAY_SERVE_IMAGES)"
    ),
]

RuleOffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--rule-off",
        help="Engine: switch a rule off by name (repeatable; env PARLAY_SERVE_RULES_OFF)",
    ),
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

ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        envvar="PARLAY_THREADS",
        show_envvar=False,
        help="The embedded model's llama.cpp threads (default: the cores free when it "
        "loads) (env PARLAY_THREADS)",
    ),
]

CtxOpt = Annotated[
    int | None,
    typer.Option(
        "--ctx",
        envvar="PARLAY_CTX",
        show_envvar=False,
        help="The embedded model's context window in tokens (default: the window it was "
        "trained for, at most 32768) (env PARLAY_CTX)",
    ),
]

ContextWindowOpt = Annotated[
    int | None,
    typer.Option(
        help="The upstream model's context window in tokens (default: asked of the "
        "upstream once: llama.cpp, vLLM, LM Studio, Ollama) "
        "(env PARLAY_SERVE_CONTEXT_WINDOW)",
    ),
]

LogLevelOpt = Annotated[str, typer.Option(help="uvicorn log level")]
