"""The engine's settings and the model's window and threads as flags, declared once:
`parlay prompt`, `chat` and `serve` take each under the same name with the same help.

The engine's flags become one `EngineChanges` (`parlay.engine.config`), which checks
each value's range when it is made, so a flag, a `PARLAY_SERVE_*` variable and Python
are refused with one message.
"""

from __future__ import annotations

from typing import Annotated

import typer

from parlay.engine.contract.pieces import ActionFormat, ImageHandling

ActionFormatOpt = Annotated[
    ActionFormat | None,
    typer.Option(
        "--action-format",
        help="Engine: how a model without native tools writes its calls. Default: typed "
        "held to a grammar where the backend supports JSON schemas (the embedded SmolLM2: "
        "json), else fenced.",
    ),
]
MaxRetriesOpt = Annotated[
    int | None,
    typer.Option(
        "--max-retries",
        help="Engine: how many times a reply that fails a check is asked again (default 2).",
    ),
]
MinCallConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--min-call-confidence",
        help="Engine: under tool_choice auto, a call goes out only when the model was at "
        "least this sure of calling and of the tool it names; else it is asked for words "
        "(0 to 1; default 0.7, the embedded SmolLM2: 0.5; 0 switches it off).",
    ),
]
RuleOffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--rule-off",
        help="Engine: switch one of its rules off by name, e.g. refusal (repeatable).",
    ),
]
ImagesOpt = Annotated[
    ImageHandling | None,
    typer.Option(
        "--images",
        help="Engine: an image for a text-only model: placeholder (a line saying an image "
        "was there and that this model reads text only) or refuse (an error); native tools "
        "pass images on (default placeholder).",
    ),
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        min=1,
        envvar="PARLAY_THREADS",
        help="llama.cpp threads for an embedded model. Default: the cores free when it loads.",
    ),
]
CtxOpt = Annotated[
    int | None,
    typer.Option(
        "--ctx",
        min=256,
        envvar="PARLAY_CTX",
        help="The context window, in tokens, an embedded model is started with. "
        "Default: the window it was trained for (at most 32768).",
    ),
]
ContextWindowOpt = Annotated[
    int | None,
    typer.Option(
        "--context-window",
        min=256,
        help="An upstream model's context window in tokens. Default: asked of the "
        "upstream once (llama.cpp, vLLM, LM Studio, Ollama).",
    ),
]
