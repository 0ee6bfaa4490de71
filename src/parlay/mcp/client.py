"""`MCPTools`: the tools of an MCP server as parlay `Tool`s.

```python
weather = MCPTools.stdio("python weather_server.py")    # a local command, over stdio
docs = MCPTools.http("http://127.0.0.1:8000/mcp", prefix="docs")   # streamable HTTP
session = Session(backend, tools=[*weather, *docs, my_function])
```

Iterating starts the server (once); `async with` does the same in async code. It stops
at `close()`, when the session holding its tools is closed, when nothing refers to it
any more, or when the program ends.
"""

from __future__ import annotations

import re
import shlex
import sys
import warnings
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from parlay._sync import run_sync
from parlay._version import __version__
from parlay.context import ToolResult
from parlay.errors import (
    InvalidRequestError,
    MCPServerError,
    MCPToolSkippedWarning,
    ParlayError,
    ToolDefinitionError,
)
from parlay.mcp._link import Link, Listing, Opener, StderrTail, on_portal, stop_soon
from parlay.mcp._wire import Watch, watched
from parlay.tool_bounds import DEFAULT_MAX_RESULT_CHARS
from parlay.tools import Tool, Toolbox

DEFAULT_STARTUP_TIMEOUT = 60.0  # a first `npx -y ...` downloads its package


def _client_info() -> types.Implementation:
    return types.Implementation(name="parlay", version=__version__)


def tool_name(name: str, prefix: str | None) -> str:
    """The name the model sees: the server's, with characters chat APIs refuse as '_',
    after `prefix` and '_' when there is one."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return f"{prefix}_{safe}" if prefix else safe


# The largest message read from a stdio server while results are bounded: room for a
# result of `max_result_chars` and more (an image, say), far from the whole memory.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
_RELAY = str(Path(__file__).with_name("_relay.py"))


def _stdio_opener(
    argv: list[str], env: Mapping[str, str] | None, cwd: str | Path | None, bounded: bool
) -> tuple[Opener, StderrTail]:
    stderr = StderrTail()
    if bounded:  # through the relay, which refuses a message over the bound unread
        argv = [sys.executable, _RELAY, str(MAX_MESSAGE_BYTES), "--", *argv]
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=dict(env) if env else None, cwd=cwd
    )

    async def opener(stack: AsyncExitStack, watch: Watch) -> Client:
        transport = watched(stdio_client(params, errlog=stderr.writer), watch, stdout=True)
        return await _enter(stack, Client(transport, client_info=_client_info(), cache=None), watch)

    return opener, stderr


def _http_opener(url: str, headers: Mapping[str, str] | None) -> Opener:
    async def opener(stack: AsyncExitStack, watch: Watch) -> Client:
        http_client = None
        if headers:
            from mcp.shared._httpx_utils import create_mcp_http_client

            http_client = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(headers))
            )
        transport = watched(
            streamable_http_client(url, http_client=http_client), watch, stdout=False
        )
        return await _enter(stack, Client(transport, client_info=_client_info(), cache=None), watch)

    return opener


async def _enter(stack: AsyncExitStack, client: Client, watch: Watch) -> Client:
    # The listing is checked against the wire schema of the version the handshake names.
    watch.version = lambda: client.session.protocol_version
    return await stack.enter_async_context(client)


class MCPTools:
    """The tools of one MCP server. Make one with `MCPTools.stdio` or `MCPTools.http`.

    Each MCP tool becomes a `Tool` with the server's name, description and input
    schema as given; arguments are checked against the schema before the call; the
    result's text is what the model reads, its structured content the result's `value`,
    and a result flagged `isError` (or a server that has gone) an error result.

    `prefix` tells apart tools of several servers: `prefix="fs"` names `read_file`
    `fs_read_file`. `include` keeps only the named tools (the server's names).
    `timeout` bounds each call (default: the session's `tool_timeout`); `parallel=False`
    keeps this server's calls from overlapping others; `max_result_chars` bounds what the
    model reads of a result (longer text is cut with a note; None: never cut, and a stdio
    message of any size is read, where by default one over 8 MiB is refused unread).

    A tool the server lists with an unusable input schema or name is skipped with an
    `MCPToolSkippedWarning` naming it, and the others load; asked for by `include`, it
    is an error.
    """

    def __init__(
        self,
        link: Link,
        *,
        prefix: str | None = None,
        include: Iterable[str] | None = None,
        timeout: float | None = None,
        parallel: bool = True,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        if prefix is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", prefix):
            raise InvalidRequestError(f"prefix {prefix!r}: letters, digits, '_' and '-' only")
        if startup_timeout <= 0:
            raise InvalidRequestError(f"startup_timeout must be positive, got {startup_timeout}")
        self._link = link
        self.prefix = prefix
        self.include = None if include is None else tuple(include)
        self.timeout = timeout
        self.parallel = parallel
        self.startup_timeout = startup_timeout
        self.max_result_chars = max_result_chars
        self._toolbox: Toolbox | None = None
        # Unreferenced (its session gone too): the server stops; at exit, _link stops it.
        self._finalizer = weakref.finalize(self, stop_soon, link)
        self._finalizer.atexit = False

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPTools:
        """A server started as a local command (`"npx -y @scope/server ."`, split like a
        shell would, or a list of arguments), spoken to over its stdin and stdout.

        The command gets the SDK's safe environment (PATH, HOME...) plus `env`."""
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise InvalidRequestError("an MCP server command cannot be empty")
        bounded = options.get("max_result_chars", DEFAULT_MAX_RESULT_CHARS) is not None
        opener, stderr = _stdio_opener(argv, env, cwd, bounded)
        shown = " ".join(argv)
        label = f"MCP server {name or (shown if len(shown) <= 60 else shown[:57] + '...')!r}"
        return cls(Link(label, opener, stderr), **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPTools:
        """A server at a streamable-HTTP URL (`http://127.0.0.1:8000/mcp`); `headers`
        go with every request (say, an Authorization header)."""
        if not re.match(r"https?://", url):
            raise InvalidRequestError(f"an MCP server URL starts with http:// or https://: {url!r}")
        label = f"MCP server {name or re.sub(r'//[^/@]*@', '//', url)!r}"
        return cls(Link(label, _http_opener(url, headers)), **options)

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def label(self) -> str:
        """How messages name this server."""
        return self._link.label

    @property
    def server_name(self) -> str | None:
        """The name the server gives itself, once started."""
        return self._link.server_name

    @property
    def is_running(self) -> bool:
        return self._link.running

    @property
    def stderr(self) -> str:
        """The last lines a stdio server wrote on stderr (its logs, its last words)."""
        return self._link.stderr()

    async def astart(self) -> MCPTools:
        """Start the server and read its tools (once); `MCPServerError` if it fails."""
        if self._toolbox is None:
            listing = await on_portal(self._link.start(self.startup_timeout))
            skips: list[str] = []
            try:
                self._toolbox = self._build(listing, skips)
            except ParlayError:
                await self.aclose()
                raise
            for skip in skips:
                warnings.warn(skip, MCPToolSkippedWarning, stacklevel=2)
        return self

    def start(self) -> MCPTools:
        return run_sync(self.astart()) if self._toolbox is None else self

    async def aclose(self) -> None:
        """Stop the server. Its tools then answer with an error result."""
        await on_portal(self._link.stop())

    def close(self) -> None:
        run_sync(self.aclose())

    def __enter__(self) -> MCPTools:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPTools:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the tools -----------------------------------------------------------------------
    @property
    def toolbox(self) -> Toolbox:
        """The tools (starts the server if it is not running yet)."""
        self.start()
        assert self._toolbox is not None
        return self._toolbox

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.toolbox)

    def __len__(self) -> int:
        return len(self.toolbox)

    def __repr__(self) -> str:
        state = "running" if self.is_running else "not running"
        return f"<MCPTools {self.label} {state}>"

    def _build(self, listing: Listing, skips: list[str]) -> Toolbox:
        """The tools; a message in `skips` for each one left out (one broken tool of a
        server must not cost the user all the others)."""
        tools = []
        for listed in self._chosen(listing, skips):
            try:
                tools.append(self._tool(listed))
            except ToolDefinitionError as exc:
                if self.include is not None:  # asked for by name: not to be dropped quietly
                    raise MCPServerError(f"{self.label}: {exc}") from exc
                skips.append(f"{self.label}: skipped tool {listed.name!r}: {exc}")
        return Toolbox(tools)

    def _chosen(self, listing: Listing, skips: list[str]) -> list[types.Tool]:
        """The listed tools `include` keeps (the tools the listing left out go to
        `skips`, or are an error when `include` names one)."""
        if self.include is None:
            skips += [f"{self.label}: skipped tool {s.shown}: {s.reason}" for s in listing.skipped]
            return list(listing.tools)
        unusable = {s.name: s for s in listing.skipped if s.name is not None}
        for name in self.include:
            if name in unusable:
                raise MCPServerError(f"{self.label}: tool {name!r}: {unusable[name].reason}")
        offered = {t.name: t for t in listing.tools}
        missing = [n for n in self.include if n not in offered]
        if missing:
            raise MCPServerError(
                f"{self.label} has no tool named {', '.join(map(repr, missing))}; "
                f"its tools: {', '.join(offered) or 'none'}"
            )
        return [offered[n] for n in self.include]

    def _tool(self, listed: types.Tool) -> Tool:
        link, original = self._link, listed.name

        async def call_mcp_tool(**arguments: Any) -> ToolResult:
            return await on_portal(link.call(original, arguments))

        return Tool.from_schema(
            tool_name(original, self.prefix),
            listed.description or listed.title or "",
            listed.input_schema,
            call_mcp_tool,
            timeout=self.timeout,
            parallel=self.parallel,
            source=self,
            max_result_chars=self.max_result_chars,
        )


__all__ = ["MCPTools", "tool_name"]
