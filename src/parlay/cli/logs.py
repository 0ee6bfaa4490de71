"""`parlay logs`: what was asked, answered and called, from the SQLite log."""

from __future__ import annotations

import json
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree as RichTree

from parlay._text import one_line
from parlay.errors import StoreError
from parlay.store import LoggedResponse, Store
from parlay.store.tree import SessionNode, session_forest

logs_app = typer.Typer(
    help="Browse the log of prompts, answers and tool calls.", invoke_without_command=True
)


def _store() -> Store:
    return Store()


def _fail(message: str) -> NoReturn:
    # One line, not wrapped at the terminal's width: a path in it stays whole.
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(1)


def _model_name(model: str) -> str:
    # llama.cpp reports the model file's full path; its file name says as much.
    return model.rsplit("/", 1)[-1] if model.startswith("/") else model


def _answer(row: LoggedResponse) -> str:
    if row.finish_reason == "cancelled":
        return "(cancelled)"
    if row.finish_reason == "error" and row.diagnostics:
        return f"(failed) {row.diagnostics.get('error', '')}"
    return row.text


@logs_app.callback()
def list_logs(
    ctx: typer.Context,
    count: Annotated[int, typer.Option("--count", "-n", min=1, help="How many responses.")] = 20,
    tool: Annotated[
        str | None, typer.Option("--tool", "-t", help="Only responses that called this tool.")
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session (an id or its prefix).")
    ] = None,
    query: Annotated[
        str | None,
        typer.Option("--query", "-q", help="Only responses whose prompt or answer has this text."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List recent responses, newest first (`parlay logs show ID` for one)."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        rows = _store().responses(limit=count, tool=tool, session_id=session, query=query)
    except StoreError as exc:
        _fail(str(exc))
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row.as_dict(), ensure_ascii=False))
        return
    table = Table("id", "time", "model", "engine", "prompt", "answer", "tools")
    for column in table.columns[4:6]:  # what was said keeps room beside the engine column
        column.min_width = 14
    for row in rows:
        table.add_row(
            str(row.id),
            row.created_at[:19].replace("T", " "),
            escape(_model_name(row.model_name or "")),
            row.engine or "",
            escape(one_line(row.prompt, 40)),
            escape(one_line(_answer(row), 40)),
            escape(", ".join(c.name for c in row.calls)),
        )
    Console(highlight=False).print(table)


@logs_app.command("show")
def show(
    response_id: Annotated[int, typer.Argument(help="The response id (from `parlay logs`).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """One response in full: prompt, answer, usage, timings, tool calls and results."""
    try:
        row = _store().response(response_id)
    except StoreError as exc:
        _fail(str(exc))
    if row is None:
        _fail(f"no response {response_id} in the log")
    if json_output:
        typer.echo(json.dumps(row.as_dict(), ensure_ascii=False, indent=2))
        return
    _print_response(Console(highlight=False), row)


@logs_app.command("path")
def path() -> None:
    """Print the log file's path, or its database's URL (set $PARLAY_LOG_DB to a file or
    a postgresql:// URL to use another)."""
    typer.echo(_store().where)


def _print_response(out: Console, row: LoggedResponse) -> None:
    out.print(f"[bold]response {row.id}[/]  session {row.session_id[:12]}  {row.created_at}")
    out.print(
        f"model: {escape(_model_name(row.model_name or '?'))}  engine: {row.engine or '?'}  "
        f"backend: {escape(row.backend or '?')}"
    )
    out.print(
        f"usage: {row.prompt_tokens} prompt + {row.completion_tokens} completion tokens; "
        f"first event {row.first_event_ms} ms, total {row.duration_ms} ms; "
        f"finish: {row.finish_reason}"
    )
    if row.prompt is not None:
        out.print("[bold]prompt[/]")
        out.print(escape(row.prompt))
    out.print("[bold]answer[/]")
    out.print(escape(row.text))
    results = {r.call_id: r for r in row.results}
    for call in row.calls:
        out.print(f"[cyan]tool call[/] {call.name}({escape(json.dumps(call.arguments))})")
        result = results.get(call.call_id)
        if result is None:
            out.print("  [dim](no result logged)[/]")
        elif result.error is not None:
            out.print(f"  [red]error[/] {escape(result.error)}")
        else:
            out.print(f"  [green]result[/] {escape(result.output)}")
    if row.diagnostics:
        out.print(f"[dim]diagnostics: {escape(json.dumps(row.diagnostics))}[/]")


@logs_app.command("tree")
def tree(
    session: Annotated[
        str | None, typer.Argument(help="Only the tree holding this session (an id or prefix).")
    ] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, help="How many trees.")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Conversations as trees: each fork (`session.fork`, `replay`, `resume=` a response)
    under the conversation it branched from, newest trees first."""
    try:
        forest = session_forest(_store(), session, count)
    except StoreError as exc:
        _fail(str(exc))
    if json_output:
        for node in forest:
            for depth, item in node.walk():
                typer.echo(json.dumps({"depth": depth, **item.as_dict()}, ensure_ascii=False))
        return
    out = Console(highlight=False)
    for node in forest:
        shown = RichTree(node.label())
        _grow(shown, node)
        out.print(shown)


def _grow(shown: RichTree, node: SessionNode) -> None:
    for child in node.children:
        _grow(shown.add(child.label()), child)
