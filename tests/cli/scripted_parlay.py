"""The real `parlay` command in a subprocess, its model replaced by a scripted one.

For the tests whose point is the command line itself (stdin, -c, --schema, logs -q):
a real process with real standard streams, answering at once. `-m` picks the script:

- `echo` (or anything else): the reply is the request's messages as JSON,
  `[[role, content], ...]`, so a test reads what the model was shown;
- `json`: a reply matching `PERSON_SCHEMA` when the request asks for structured output;
- `tool`: a call of `add` {"a": 2, "b": 3} until a result is in the history, then "The sum is 5.";
- `options`: the reply is the generation options the request carries, as JSON;
- `stall`: for the prompt "go", a call of `add`, then of `stall` (a tool of the test's
  that never returns); for any other prompt, `echo`;
- `slow`: `echo`, after $SCRIPTED_DELAY seconds (default 3) without a token;
- `looping`: the embedded stack (`-m embedded`) on a script that says "The answer is
  579." over and over, so the loop guard stops it;
- `slowtool`, `slowloop`: `tool` and `loop`, each reply after $SCRIPTED_DELAY seconds
  (so a terminal shows the waiting spinner between a tool's result and the next reply).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs

from parlay.backends.base import PLAIN_CHAT, Backend
from parlay.backends.catalogue import SMOLLM2_FILE
from parlay.backends.local import LocalBackend
from parlay.backends.scripted import ScriptedBackend, calls
from parlay.context import ToolResult
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.start import embedded_stack

HERE = Path(__file__).resolve()


def _echo(request: ChatRequest) -> str:
    return json.dumps([[m.role, getattr(m, "content", "")] for m in request.messages])


def _json(request: ChatRequest) -> str:
    assert request.response_format is not None, "no response_format in the request"
    return json.dumps({"name": "Ada", "age": 36})


def _tool(request: ChatRequest) -> Any:
    if any(isinstance(m, ToolResult) for m in request.messages):
        return "The sum is 5."
    return calls(("add", {"a": 2, "b": 3}))


def _loop(request: ChatRequest) -> Any:
    return calls(("add", {"a": 2, "b": 3}))  # never answers: the chain limit stops it


def _stall(request: ChatRequest) -> Any:
    last_prompt = [m for m in request.messages if m.role == "user"][-1]
    if getattr(last_prompt, "content", "") != "go":
        return _echo(request)
    if any(isinstance(m, ToolResult) for m in request.messages):
        return calls(("stall", {}))
    return calls(("add", {"a": 2, "b": 3}))


def _options(request: ChatRequest) -> str:
    asked = attrs.asdict(request.options)
    return json.dumps({k: v for k, v in asked.items() if v not in (None, ())})


SCRIPTS = {"json": _json, "tool": _tool, "loop": _loop, "stall": _stall, "options": _options}


class SlowBackend(ScriptedBackend):
    """A model that thinks a while before its first token (as a small one on a CPU does)."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        await asyncio.sleep(float(os.environ.get("SCRIPTED_DELAY", "3")))
        async for event in super().stream(request):
            yield event


def looping() -> Backend:
    """The embedded stack as `-m embedded` builds it (SmolLM2's file, the engine), its
    llama.cpp server replaced by a script that says "The answer is 579." over and over, as
    SmolLM2 did after a tool result."""
    local = LocalBackend(Path(SMOLLM2_FILE))  # never loaded: its client is set below
    local._backend = ScriptedBackend(  # type: ignore[assignment]
        lambda request: "The answer is 579. " * 8, capabilities=PLAIN_CHAT
    )
    return embedded_stack(local)


def backend(spec: str | None, **_flags: Any) -> Backend:
    if spec == "looping":
        return looping()
    if spec == "slow":
        return SlowBackend(_echo)
    if spec == "slowtool":
        return SlowBackend(_tool)
    if spec == "slowloop":
        return SlowBackend(_loop)
    return ScriptedBackend(SCRIPTS.get(spec or "", _echo))


def run(
    args: list[str],
    log_db: Path,
    stdin: str | None = "",
    timeout: float = 60,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`parlay ARGS` in a subprocess writing to `log_db`; `stdin` None: no pipe (inherits
    the test runner's stdin, which pytest makes a non-terminal null device)."""
    env = {**os.environ, "PARLAY_LOG_DB": str(log_db)}
    return subprocess.run(
        [sys.executable, str(HERE), *args],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=cwd,
    )


if __name__ == "__main__":
    import parlay.cli.options

    parlay.cli.options.resolve_model = backend
    from parlay.cli.app import main

    sys.argv[0] = "parlay"
    main()
