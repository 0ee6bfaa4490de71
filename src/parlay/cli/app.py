"""The `parlay` command: the typer application every subcommand registers on."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console

from parlay.cli import help_format  # noqa: F401  (flags show no <bool> in --help)
from parlay.cli.default_command import KeyValueOptions, PromptByDefault
from parlay.cli.line_input import chat_lines
from parlay.cli.logs import logs_app
from parlay.cli.mcp_cmd import mcp_app
from parlay.cli.models_cmd import models
from parlay.cli.options import RunOptions, build_session, with_run_options
from parlay.cli.progress import WaitStatus
from parlay.cli.prompt_input import read_prompt
from parlay.cli.protocol import CliSession
from parlay.cli.run import run_turn
from parlay.cli.schema import load_schema
from parlay.cli.serve import serve
from parlay.cli.tools_cmd import tools_app
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    ParlayError,
    ToolDefinitionError,
    ToolLoopError,
)

app = typer.Typer(
    name="parlay",
    cls=PromptByDefault,
    help="Chat with models, with tool calling that works on every model. "
    '`parlay "a prompt"` is `parlay prompt "a prompt"`.',
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(tools_app, name="tools")
app.add_typer(logs_app, name="logs")
app.add_typer(mcp_app, name="mcp")


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def friendly_errors(stderr: Console) -> Iterator[None]:
    """parlay's errors as one clear line on stderr and an exit code, not a traceback."""
    try:
        yield
    except ToolDefinitionError as exc:
        stderr.print(f"[red]error:[/] {exc}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    except BackendConnectionError as exc:
        stderr.print(
            f"[red]error:[/] no model reachable: {exc}. Start the server, or pick another "
            "model with -m.",
        )
        raise typer.Exit(1) from None
    except ToolLoopError as exc:
        stderr.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None
    except (BackendError, ParlayError) as exc:
        stderr.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _status(opts: RunOptions, stderr: Console) -> WaitStatus:
    """The spinner of a run's waits; the tool lines go through it, never into its line.
    Not over a question on stderr (--tools-approve), nor for a program (--json)."""
    return WaitStatus(stderr, enabled=not (opts.json or opts.tools_approve))


def _answer(session: CliSession, text: str, opts: RunOptions, status: WaitStatus) -> None:
    schema = load_schema(opts.schema) if opts.schema else None
    status.backend = session.backend
    # An answer held to --schema is printed once it is checked, never streamed.
    stream = None if (opts.no_stream or opts.json or schema) else _out
    outcome = run_turn(
        session,
        text,
        tool_choice=opts.tool_choice,
        chain_limit=opts.chain_limit,
        write=stream,
        format=schema.format if schema else None,
        status=status,
    )
    if schema is not None:
        outcome.text = schema.check(outcome.text)
    if opts.json:
        log_session = session.log.session_id if session.log is not None else None
        _out(json.dumps(outcome.as_dict(log_session), ensure_ascii=False) + "\n")
    elif stream is None:
        _out(outcome.text + "\n")


@app.command(cls=KeyValueOptions)
@with_run_options
def prompt(
    text: Annotated[
        str | None,
        typer.Argument(
            help="The prompt. Piped stdin comes first, then this; '-' or none: stdin only."
        ),
    ] = None,
    *,
    opts: RunOptions,
) -> None:
    """Send one prompt; the answer streams to stdout, tools run as the model asks."""
    stderr = stderr_console()
    text = read_prompt(text, sys.stdin, stdin_is_for_answers=opts.tools_approve)
    # Leaving the session's `with` stops the --mcp servers it started.
    status = _status(opts, stderr)
    with friendly_errors(stderr), build_session(opts, stderr, lines=status) as session:
        _answer(session, text, opts, status)


@app.command(cls=KeyValueOptions)
@with_run_options
def chat(*, opts: RunOptions) -> None:
    """An interactive chat; the whole conversation is kept. Type 'exit' or Ctrl-D to end;
    Ctrl-C stops the answer being written."""
    stderr = stderr_console()
    status = _status(opts, stderr)
    with friendly_errors(stderr), build_session(opts, stderr, lines=status) as session:
        stderr.print(f"[dim]chatting with {session.backend.name}; 'exit' or Ctrl-D to end[/]")
        with chat_lines(stderr) as next_line:
            while (line := next_line()) is not None:
                if line.strip() in ("exit", "quit", "/exit", "/quit"):
                    break
                if not line.strip():
                    continue
                try:
                    _answer(session, line, opts, status)
                except (ToolLoopError, BackendError) as exc:
                    # One bad turn does not end the chat; the context is as it was before.
                    stderr.print(f"[red]error:[/] {exc}")
                except KeyboardInterrupt:  # stops this turn, not the chat
                    stderr.print("\n[dim]cancelled; the conversation goes on from before it[/]")


# Registered after prompt and chat so `parlay --help` lists the everyday commands first.
app.command("serve")(serve)
app.command("models")(models)


def _print_version(value: bool) -> None:
    if value:
        from parlay import __version__

        typer.echo(f"parlay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print parlay's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Chat with models, with tool calling that works on every model."""


def _warning_line(message: Warning | str, *_: object, **__: object) -> str:
    # A user of the command is told what to do, not which line of parlay warned.
    return f"warning: {message}\n"


def main() -> None:
    """Entry point of the `parlay` console script."""
    warnings.formatwarning = _warning_line
    app()


if __name__ == "__main__":
    main()
