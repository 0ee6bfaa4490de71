"""Options shared by `parlay prompt` and `parlay chat`, and the session they configure."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from attrs import frozen
from rich.console import Console

from parlay.cli.models import MODEL_HELP, resolve_model
from parlay.cli.protocol import CliSession, stdin_approver
from parlay.cli.toolfiles import collect_tools
from parlay.request import GenerationOptions, ToolChoice
from parlay.store import Store, TurnRecorder

ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help=MODEL_HELP)]
SystemOpt = Annotated[str | None, typer.Option("--system", "-s", help="A system prompt.")]
ToolOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--tool", "-T", help="A Python file whose public functions become tools (repeatable)."
    ),
]
FunctionsOpt = Annotated[
    list[str] | None,
    typer.Option("--functions", help="Python code whose functions become tools (repeatable)."),
]
ToolChoiceOpt = Annotated[
    str | None,
    typer.Option("--tool-choice", help="auto (default), none, required, or a tool's name."),
]
ChainLimitOpt = Annotated[
    int, typer.Option("--chain-limit", min=1, help="Most tool rounds per prompt.")
]
DebugOpt = Annotated[
    bool, typer.Option("--tools-debug", help="Show each tool call and result on stderr.")
]
ApproveOpt = Annotated[
    bool, typer.Option("--tools-approve", help="Ask before each tool call; 'no' cancels it.")
]
NoStreamOpt = Annotated[
    bool, typer.Option("--no-stream", help="Print the answer once it is complete.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object per answer.")]
PromptedOpt = Annotated[
    bool,
    typer.Option("--prompted", help="Use prompted tool calling (for models without native tools)."),
]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Most tokens per model reply.")
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature.")
]
NoLogOpt = Annotated[bool, typer.Option("--no-log", help="Do not write this run to the log.")]


@frozen
class RunOptions:
    model: str | None = None
    system: str | None = None
    tool: tuple[Path, ...] = ()
    functions: tuple[str, ...] = ()
    tool_choice: str | None = None
    chain_limit: int = 5
    tools_debug: bool = False
    tools_approve: bool = False
    no_stream: bool = False
    json: bool = False
    prompted: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    no_log: bool = False


def build_session(opts: RunOptions, stderr: Console) -> CliSession:
    """The session a `prompt` or `chat` run talks through (errors are `ParlayError`s)."""
    tools = collect_tools(opts.tool, opts.functions)
    choice = ToolChoice.coerce(opts.tool_choice)
    if choice.mode == "tool" and choice.name not in {t.name for t in tools}:
        known = ", ".join(t.name for t in tools) or "none: pass -T FILE.py"
        raise typer.BadParameter(
            f"--tool-choice {opts.tool_choice!r} is not a tool (the tools: {known})"
        )
    backend = resolve_model(opts.model, use_prompted=opts.prompted)
    session = CliSession(
        backend,
        tools=tools,
        system=opts.system,
        chain_limit=opts.chain_limit,
        options=GenerationOptions(max_tokens=opts.max_tokens, temperature=opts.temperature),
        debug=stderr if opts.tools_debug else None,
        approver=stdin_approver(stderr, sys.stdin.readline) if opts.tools_approve else None,
    )
    if not opts.no_log:
        session.log = TurnRecorder(
            Store(),
            source="cli",
            backend=backend.name,
            system=opts.system,
            tools=[t.name for t in tools],
        )
    return session
