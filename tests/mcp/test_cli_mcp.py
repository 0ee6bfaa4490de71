"""`parlay prompt --mcp ... --mcp-url ...` on a scripted model, with the real test server."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import pytest
from mcp_harness import SERVER, HttpServer
from typer.testing import CliRunner

from parlay.backends.scripted import ScriptedBackend, calls
from parlay.cli.app import app
from parlay.cli.mcp_cmd import split_prefix
from parlay.context import ToolResult

runner = CliRunner()
COMMAND = shlex.join(SERVER)


@pytest.fixture(autouse=True)
def private_log(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARLAY_LOG_DB", str(tmp_path / "log.db"))


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(*replies: Any) -> ScriptedBackend:
        backend = ScriptedBackend(list(replies))
        monkeypatch.setattr("parlay.cli.options.resolve_model", lambda spec, **flags: backend)
        return backend

    return install


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("python server.py", (None, "python server.py")),
        ("fs=npx -y @scope/server .", ("fs", "npx -y @scope/server .")),
        ("http://h:8000/mcp?a=b", (None, "http://h:8000/mcp?a=b")),
        ("docs=https://h/mcp?a=b", ("docs", "https://h/mcp?a=b")),
    ],
)
def test_a_name_before_the_server_is_its_prefix(value: str, expected: tuple[str | None, str]):
    assert split_prefix(value) == expected


def test_prompt_uses_tools_of_a_stdio_and_an_http_server(scripted: Any):
    server = HttpServer()
    try:
        backend = scripted(
            calls(("add", {"a": 2, "b": 3}), ("web_forecast", {"city": "Rome"})), "Done."
        )
        args = ["prompt", "go", "--mcp", COMMAND, "--mcp-url", f"web={server.url}", "--json"]
        result = runner.invoke(app, [*args, "--tool-timeout", "30"])
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    offered = {s.name for s in backend.requests[0].tools}
    assert {"add", "forecast", "web_add", "web_forecast"} <= offered
    payload = json.loads(result.stdout)
    assert [(c["name"], c["output"]) for c in payload["tool_calls"]] == [
        ("add", "5"),
        ("web_forecast", '{\n  "city": "Rome",\n  "celsius": 21.5\n}'),
    ]


def test_a_round_of_calls_runs_side_by_side_on_the_command_line(scripted: Any):
    backend = scripted(calls(*[("meet", {"key": "cli", "parties": 3})] * 3), "ok")
    result = runner.invoke(app, ["prompt", "go", "--mcp", COMMAND, "--no-stream"])
    assert result.exit_code == 0, result.output
    sent = [m for m in backend.requests[1].messages if isinstance(m, ToolResult)]
    assert [m.output for m in sent] == ["met"] * 3


def test_a_slow_call_under_tool_timeout_is_told_to_the_model(scripted: Any):
    backend = scripted(calls(("hang", {})), "gave up")
    result = runner.invoke(
        app, ["prompt", "go", "--mcp", COMMAND, "--tool-timeout", "0.5", "--no-stream"]
    )
    assert result.exit_code == 0, result.output
    told = backend.requests[1].messages[-1]
    assert isinstance(told, ToolResult) and told.error == "tool 'hang' timed out after 0.5 s"


def test_two_servers_offering_one_name_need_a_prefix(scripted: Any):
    scripted("unused")
    result = runner.invoke(app, ["prompt", "go", "--mcp", COMMAND, "--mcp", COMMAND])
    assert result.exit_code == 2
    assert "two tools are named 'add'" in result.stderr and "prefix" in result.stderr


def test_a_server_that_cannot_start_is_a_clear_error(scripted: Any):
    scripted("unused")
    broken = shlex.join([sys.executable, "-c", "import sys; sys.exit('no token given')"])
    result = runner.invoke(app, ["prompt", "go", "--mcp", broken])
    assert result.exit_code == 1
    assert "could not be started" in result.stderr and "no token given" in result.stderr
