"""Options shared by `parlay prompt` and `parlay chat`, and the session they configure."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from attrs import evolve, field, frozen
from rich.console import Console

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
from parlay.cli.generation import OptionOpt, generation_options
from parlay.cli.mcp_cmd import with_mcp_tools
from parlay.cli.models import EMBEDDED, MODEL_HELP, resolve_model
from parlay.cli.protocol import CliSession, Printer, stdin_approver
from parlay.cli.resume import Conversation, find_conversation, rebuild_context
from parlay.cli.toolfiles import collect_tools
from parlay.engine.config import EngineChanges
from parlay.errors import ConfigurationError
from parlay.request import GenerationOptions, ToolChoice, unknown_choice
from parlay.start import greedy
from parlay.store import Store, TurnRecorder
from parlay.tools import DEFAULT_TOOL_TIMEOUT, Tool, timeout_problem

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
McpOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        help="An MCP server to start, as 'COMMAND ARGS' over stdio; its tools join -T's "
        "(repeatable; 'NAME=COMMAND' prefixes its tool names with NAME_).",
    ),
]
McpUrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-url",
        help="An MCP server's streamable-HTTP URL; its tools join -T's (repeatable; "
        "'NAME=URL' prefixes its tool names with NAME_).",
    ),
]


def _tool_timeout(value: str | float | None) -> float | None:
    """`--tool-timeout`: seconds, or `none` for no bound at all (asked for by name)."""
    if not isinstance(value, str):  # typer passes the default through the parser too
        return value
    if value.strip().lower() == "none":
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not seconds; a number, or 'none'") from None
    if (problem := timeout_problem(seconds)) is not None:
        raise typer.BadParameter(f"{problem.replace('None', 'none')}")
    return seconds


ToolTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--tool-timeout",
        parser=_tool_timeout,
        metavar="SECONDS",
        help=f"Seconds a tool call may take; then the model is told. Default "
        f"{DEFAULT_TOOL_TIMEOUT:g}; 'none': no bound.",
    ),
]
ToolChoiceOpt = Annotated[
    str | None,
    typer.Option("--tool-choice", help="auto (default), none, required, or a tool's name."),
]
ChainLimitOpt = Annotated[
    int, typer.Option("--chain-limit", min=1, help="Most tool rounds per prompt.")
]
DebugOpt = Annotated[
    bool, typer.Option("--tools-debug", "--td", help="Show each tool call and result on stderr.")
]
ApproveOpt = Annotated[
    bool,
    typer.Option("--tools-approve", "--ta", help="Ask before each tool call; 'no' cancels it."),
]
NoStreamOpt = Annotated[
    bool, typer.Option("--no-stream", help="Print the answer once it is complete.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object per answer.")]
PromptedOpt = Annotated[
    bool,
    typer.Option(
        "--prompted",
        help="Use prompted tool calling (for models without native tools); any engine "
        "option below implies it.",
    ),
]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Most tokens per model reply.")
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature.")
]
NoLogOpt = Annotated[bool, typer.Option("--no-log", help="Do not write this run to the log.")]
ContinueOpt = Annotated[
    bool,
    typer.Option("--continue", "-c", help="Continue the latest logged conversation (as llm's -c)."),
]
CidOpt = Annotated[
    str | None,
    typer.Option(
        "--cid",
        "--conversation",
        help="Continue the logged conversation with this id (a prefix will do; see parlay logs).",
    ),
]
SchemaOpt = Annotated[
    str | None,
    typer.Option(
        "--schema",
        help="The answer as JSON matching this JSON schema (inline or a file) or pydantic "
        "model (module:Class); printed once checked.",
    ),
]


@frozen
class RunOptions:
    model: str | None = None
    system: str | None = None
    tool: tuple[Path, ...] = ()
    functions: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    mcp_url: tuple[str, ...] = ()
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    tool_choice: str | None = None
    chain_limit: int = 5
    tools_debug: bool = False
    tools_approve: bool = False
    no_stream: bool = False
    json: bool = False
    prompted: bool = False
    engine: EngineChanges = field(factory=EngineChanges)
    # --max-tokens, --temperature and -o, read and checked (`parlay.cli.generation`).
    generation: GenerationOptions = field(factory=GenerationOptions)
    no_log: bool = False
    threads: int | None = None
    ctx: int | None = None
    context_window: int | None = None
    continue_conversation: bool = False
    cid: str | None = None
    schema: str | None = None


def run_options(
    model: ModelOpt = None,
    system: SystemOpt = None,
    tool: ToolOpt = None,
    functions: FunctionsOpt = None,
    mcp: McpOpt = None,
    mcp_url: McpUrlOpt = None,
    tool_timeout: ToolTimeoutOpt = DEFAULT_TOOL_TIMEOUT,
    tool_choice: ToolChoiceOpt = None,
    chain_limit: ChainLimitOpt = 5,
    tools_debug: DebugOpt = False,
    tools_approve: ApproveOpt = False,
    no_stream: NoStreamOpt = False,
    json_output: JsonOpt = False,
    prompted: PromptedOpt = False,
    action_format: ActionFormatOpt = None,
    max_retries: MaxRetriesOpt = None,
    min_call_confidence: MinCallConfidenceOpt = None,
    rule_off: RuleOffOpt = None,
    images: ImagesOpt = None,
    max_tokens: MaxTokensOpt = None,
    temperature: TemperatureOpt = None,
    option: OptionOpt = None,
    no_log: NoLogOpt = False,
    threads: ThreadsOpt = None,
    ctx: CtxOpt = None,
    context_window: ContextWindowOpt = None,
    continue_conversation: ContinueOpt = False,
    cid: CidOpt = None,
    schema: SchemaOpt = None,
) -> RunOptions:
    """The options of `prompt` and `chat`, declared once: typer reads this signature
    (a `ConfigurationError` when an engine setting is out of range)."""
    return options_from_flags(dict(locals()))  # first: every option, and nothing else


# Options whose `RunOptions` field is named otherwise, those that repeat (kept as a tuple),
# and the engine's own (an `EngineChanges`, which checks their ranges).
RENAMED = {"json_output": "json"}
REPEATED = ("tool", "functions", "mcp", "mcp_url")
ENGINE = {
    "action_format": "action_format",
    "max_retries": "max_retries",
    "min_call_confidence": "min_call_confidence",
    "rule_off": "rules_off",
    "images": "images",
}


def options_from_flags(flags: dict[str, Any]) -> RunOptions:
    """`run_options`' values as `RunOptions`, each by its field's name."""
    engine = EngineChanges(**{name: flags.pop(flag) for flag, name in ENGINE.items()})
    generation = generation_options(
        flags.pop("option") or (),
        max_tokens=flags.pop("max_tokens"),
        temperature=flags.pop("temperature"),
    )
    values: dict[str, Any] = {
        RENAMED.get(k, k): tuple(v or ()) if k in REPEATED else v for k, v in flags.items()
    }
    return RunOptions(**values, engine=engine, generation=generation)


def with_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command(own params..., *, opts: RunOptions)` as a typer command taking its own
    parameters followed by every `run_options` option, so `prompt` and `chat` share one
    declaration and show the same options in `--help`."""
    own = [
        p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "opts"
    ]
    shared = inspect.signature(run_options, eval_str=True).parameters
    clash = {p.name for p in own} & set(shared)
    if clash:
        raise TypeError(f"{command.__name__}: parameters {sorted(clash)} are run options")

    def wrapper(**params: Any) -> None:
        try:
            opts = run_options(**{name: params.pop(name) for name in shared})
        except ConfigurationError as exc:  # as `parlay serve` says it
            typer.echo(f"parlay {command.__name__}: {exc}", err=True)
            raise typer.Exit(2) from exc
        command(**params, opts=opts)

    # Not functools.wraps: it would copy `command`'s string annotations for typer to
    # evaluate in this module. typer reads `__signature__` (inspect.signature honours it).
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(wrapper, attr, getattr(command, attr))
    wrapper.__signature__ = inspect.Signature([*own, *shared.values()])  # type: ignore[attr-defined]
    return wrapper


def _options(opts: RunOptions) -> GenerationOptions:
    """What each reply is asked for; an embedded model answers greedily, as in Python
    (`parlay.start.start_session`), unless `--temperature` says otherwise."""
    options = opts.generation
    embedded = (opts.model or "").strip().lower()
    if embedded in EMBEDDED or embedded.endswith(".gguf"):
        return greedy(options)
    return options


def build_session(opts: RunOptions, stderr: Console, *, lines: Printer | None = None) -> CliSession:
    """The session a `prompt` or `chat` run talks through (errors are `ParlayError`s);
    `--tools-debug` lines go to `lines` (default: `stderr`)."""
    tools = collect_tools(opts.tool, opts.functions)
    tools = with_mcp_tools(tools, opts.mcp, opts.mcp_url)
    choice = ToolChoice.coerce(opts.tool_choice)
    if choice.mode == "tool" and choice.name not in {t.name for t in tools}:
        raise typer.BadParameter(unknown_choice(choice.name or "", [t.name for t in tools]))
    if choice.forces_call and not tools:
        raise typer.BadParameter(
            f"--tool-choice {opts.tool_choice} needs a tool to call: pass -T FILE.py, "
            "--functions or --mcp"
        )
    backend = resolve_model(
        opts.model,
        use_prompted=opts.prompted,
        engine=opts.engine,
        threads=opts.threads,
        n_ctx=opts.ctx,
        context_window=opts.context_window,
    )
    resumed = None
    if opts.continue_conversation or opts.cid is not None:
        resumed = find_conversation(Store(), opts.cid)
    session = CliSession(
        backend,
        log=_recorder(opts, backend.name, tools, resumed),
        ctx=rebuild_context(resumed, opts.system) if resumed is not None else None,
        tools=tools,
        system=opts.system if resumed is None else None,
        chain_limit=opts.chain_limit,
        options=_options(opts),
        debug=(lines or stderr) if opts.tools_debug else None,
        approver=stdin_approver(stderr, sys.stdin.readline) if opts.tools_approve else None,
        tool_timeout=opts.tool_timeout,
        # Approval asks one question at a time, so calls then run one at a time too.
        parallel_tools=not opts.tools_approve,
    )
    return session


def _recorder(
    opts: RunOptions, backend: str, tools: Sequence[Tool], resumed: Conversation | None
) -> TurnRecorder | bool:
    if opts.no_log:
        return False
    recorder = TurnRecorder(
        Store(), source="cli", backend=backend, system=opts.system, tools=[t.name for t in tools]
    )
    if resumed is not None:  # the new turns join the logged conversation
        recorder.session = evolve(recorder.session, id=resumed.session.id)
    return recorder
