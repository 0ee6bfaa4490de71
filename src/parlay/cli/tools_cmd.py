"""`parlay tools list`: the tools a file (or code) defines, as the model will see them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from parlay.cli.toolfiles import collect_tools
from parlay.errors import ToolDefinitionError

tools_app = typer.Typer(help="Inspect tools.", no_args_is_help=True)


@tools_app.command("list")
def list_tools(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Python files whose public functions are tools.")
    ] = None,
    functions: Annotated[
        list[str] | None, typer.Option("--functions", help="Python code defining functions.")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Names, descriptions and JSON schemas of the tools in PATH.py files."""
    stderr = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        tools = collect_tools(paths or (), functions or ())
    except ToolDefinitionError as exc:
        stderr.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if json_output:
        payload = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools
        ]
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    if not tools:
        stderr.print("no tools found: pass a Python file (parlay tools list tools.py)")
        return
    out = Console(highlight=False)
    table = Table("name", "description", "parameters", show_lines=True)
    for t in tools:
        table.add_row(
            t.name,
            t.description,
            Syntax(json.dumps(t.parameters, indent=2), "json", word_wrap=True),
        )
    out.print(table)
