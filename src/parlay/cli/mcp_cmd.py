"""MCP on the command line: `--mcp` / `--mcp-url` for prompt and chat, `parlay mcp serve`.

`--mcp "COMMAND ARGS"` starts a server over stdio, `--mcp-url URL` reaches one over
streamable HTTP; `NAME=` before either (`--mcp "fs=npx -y @scope/server ."`) prefixes its
tools' names with `NAME_`, which is how two servers offering one name are told apart.
The `mcp` SDK is imported only when one of these is used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from parlay.cli.toolfiles import collect_tools
from parlay.errors import ToolDefinitionError
from parlay.tools import Tool, Toolbox

mcp_app = typer.Typer(help="MCP: serve parlay tools to other MCP clients.", no_args_is_help=True)

_PREFIXED = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)=(.+)", re.DOTALL)


def split_prefix(value: str) -> tuple[str | None, str]:
    """`"fs=npx server"` -> ("fs", "npx server"); no `NAME=` -> (None, value).

    A URL's own `=` (in its query) is never a prefix: a prefix comes before `http`."""
    found = _PREFIXED.fullmatch(value.strip())
    if found is None or found.group(1).lower() in ("http", "https"):
        return None, value.strip()
    return found.group(1), found.group(2).strip()


def with_mcp_tools(tools: list[Tool], commands: Iterable[str], urls: Iterable[str]) -> list[Tool]:
    """`tools` and the tools of every `--mcp` and `--mcp-url` server, each started once.

    Raises `MCPServerError` for a server that cannot be started and `ToolDefinitionError`
    for two tools of one name, having stopped the servers it started; otherwise they stop
    when the session is closed or the program ends."""
    commands, urls = list(commands), list(urls)
    if not commands and not urls:
        return tools
    from parlay.mcp import MCPTools

    servers: list[MCPTools] = []
    for value in commands:
        prefix, command = split_prefix(value)
        servers.append(MCPTools.stdio(command, prefix=prefix))
    for value in urls:
        prefix, url = split_prefix(value)
        servers.append(MCPTools.http(url, prefix=prefix))
    combined = list(tools)
    try:
        for server in servers:
            combined.extend(server.start())
        Toolbox(combined)  # a name clash is reported now, with the servers stopped
    except BaseException:
        for server in servers:
            server.close()
        raise
    return combined


@mcp_app.command("serve")
def serve_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Python files whose public functions are the tools (as for -T)."),
    ] = None,
    functions: Annotated[
        list[str] | None,
        typer.Option("--functions", help="Python code whose functions are tools (repeatable)."),
    ] = None,
    name: Annotated[str, typer.Option(help="The server's name, as clients see it.")] = "parlay",
) -> None:
    """Serve the tools of PATH.py files as an MCP server over stdin and stdout."""
    try:
        tools = collect_tools(paths or (), functions or ())
    except ToolDefinitionError as exc:
        typer.echo(f"parlay mcp serve: {exc}", err=True)
        raise typer.Exit(2) from None
    if not tools:
        typer.echo(
            "parlay mcp serve: no tools: pass a Python file (parlay mcp serve tools.py)", err=True
        )
        raise typer.Exit(2)
    from parlay.mcp import serve

    typer.echo(
        f"parlay mcp serve: {len(tools)} tools on stdio ({', '.join(t.name for t in tools)})",
        err=True,
    )
    serve(tools, name=name)
