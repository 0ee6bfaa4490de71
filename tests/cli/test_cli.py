"""The `parlay` command through typer's runner, on a scripted model (protocol, not wording)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from parlay.backends.scripted import ScriptedBackend, calls
from parlay.cli.app import app
from parlay.context import ToolResult
from parlay.engine.backend import PromptedBackend
from parlay.store import Store

runner = CliRunner()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make `-m` resolve to a ScriptedBackend with the replies given."""

    def install(*replies: Any) -> ScriptedBackend:
        backend = ScriptedBackend(list(replies), chunk_size=3)
        monkeypatch.setattr("parlay.cli.options.resolve_model", lambda spec, **flags: backend)
        return backend

    return install


def test_prompt_streams_text_to_stdout(scripted: Any) -> None:
    scripted("Hello there, friend.")
    result = runner.invoke(app, ["prompt", "hi"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "Hello there, friend.\n"


def test_system_prompt_reaches_the_model(scripted: Any) -> None:
    backend = scripted("ok")
    runner.invoke(app, ["prompt", "hi", "-s", "be terse", "--no-stream"])
    (request,) = backend.requests
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "be terse"),
        ("user", "hi"),
    ]


def test_tool_call_debug_output_json_and_log(scripted: Any, tools_file: Path) -> None:
    backend = scripted(calls(("add", {"a": 2, "b": 3})), "The sum is 5.")
    result = runner.invoke(
        app, ["prompt", "2+3?", "-T", str(tools_file), "--tools-debug", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert {s.name for s in backend.requests[0].tools} == {"add", "shout"}
    # the second request carries the tool result back to the model
    tool_message = backend.requests[1].messages[-1]
    assert isinstance(tool_message, ToolResult) and tool_message.output == "5"
    assert "tool call" in result.stderr and 'add({"a": 2, "b": 3})' in result.stderr
    assert "tool result" in result.stderr and "add: 5" in result.stderr
    payload = json.loads(result.stdout)
    assert payload["text"] == "The sum is 5."
    assert payload["rounds"] == 1
    (call,) = payload["tool_calls"]
    assert (call["name"], call["arguments"], call["output"]) == ("add", {"a": 2, "b": 3}, "5")

    (asked,) = Store().responses()  # one prompt, one row, as the JSON says
    assert asked.id == payload["log"]["response_id"]
    assert asked.prompt == "2+3?" and asked.calls[0].call_id == call["id"]
    assert asked.results[0].output == "5"
    assert asked.text == "The sum is 5." and asked.finish_reason == "stop"
    assert Store().sessions()[0].source == "cli"


def test_approval_answered_no_cancels_the_call_and_tells_the_model(
    scripted: Any, tools_file: Path
) -> None:
    backend = scripted(calls(("shout", {"text": "hi"})), "I could not shout.")
    result = runner.invoke(
        app, ["prompt", "shout hi", "-T", str(tools_file), "--tools-approve"], input="n\n"
    )
    assert result.exit_code == 0, result.output
    assert "Run tool" in result.stderr and "shout" in result.stderr
    assert "[y/N]" in result.stderr  # no is the default, as the hint says
    told = backend.requests[1].messages[-1]
    assert isinstance(told, ToolResult) and told.is_error and "declined" in (told.error or "")
    assert "HI" not in result.stdout


def test_approval_answered_yes_runs_the_call(scripted: Any, tools_file: Path) -> None:
    backend = scripted(calls(("shout", {"text": "hi"})), "done")
    result = runner.invoke(
        app, ["prompt", "x", "-T", str(tools_file), "--tools-approve"], input="yes\n"
    )
    assert result.exit_code == 0, result.output
    assert backend.requests[1].messages[-1].output == "HI"


def test_functions_option_and_forced_tool_choice(scripted: Any) -> None:
    backend = scripted(calls(("double", {"x": 4})), "8")
    code = "def double(x: int) -> int:\n    'Double x.'\n    return 2 * x\n"
    result = runner.invoke(
        app, ["prompt", "double 4", "--functions", code, "--tool-choice", "double", "--no-log"]
    )
    assert result.exit_code == 0, result.output
    assert backend.requests[0].tool_choice.name == "double"
    assert backend.requests[1].tool_choice.mode == "auto"  # forced once, then free
    assert Store().count() == 0  # --no-log


def test_chain_limit_stops_a_model_that_keeps_calling(scripted: Any, tools_file: Path) -> None:
    scripted(*[calls(("add", {"a": 1, "b": 1}))] * 3)
    result = runner.invoke(app, ["prompt", "x", "-T", str(tools_file), "--chain-limit", "2"])
    assert result.exit_code == 1
    assert "--chain-limit" in result.stderr


def test_a_call_cut_by_the_token_limit_is_an_error_naming_max_tokens(
    monkeypatch: pytest.MonkeyPatch, tools_file: Path, stops_short: Any
) -> None:
    cut = stops_short(['{"action": {"tool": "add", "args": {"a": 2, "b": 3'])
    engine = PromptedBackend(cut, max_retries=0)
    monkeypatch.setattr("parlay.cli.options.resolve_model", lambda spec, **flags: engine)
    result = runner.invoke(app, ["prompt", "2+3?", "-T", str(tools_file)])
    assert result.exit_code == 1
    assert "--max-tokens" in result.stderr and "'add'" in result.stderr
    [row] = Store().responses()
    assert row.finish_reason == "error" and row.diagnostics is not None
    assert row.diagnostics["error"].startswith("ToolCallTruncatedError")
    assert [call.name for call in row.calls] == ["add"] and row.results == ()  # not run


def test_chat_keeps_history(scripted: Any) -> None:
    backend = scripted("first answer", "second answer")
    result = runner.invoke(app, ["chat", "--no-stream"], input="one\ntwo\nexit\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["first answer", "second answer"]
    contents = [m.content for m in backend.requests[1].messages]
    assert contents == ["one", "first answer", "two"]


def test_tools_list_shows_public_functions_with_schemas(tools_file: Path) -> None:
    result = runner.invoke(app, ["tools", "list", str(tools_file), "--json"])
    assert result.exit_code == 0, result.output
    listed = {t["name"]: t for t in json.loads(result.stdout)}
    assert set(listed) == {"add", "shout"}  # not _helper, not the imported math
    assert listed["add"]["parameters"]["required"] == ["a", "b"]
    assert listed["add"]["parameters"]["properties"]["a"]["description"] == "The first number."
    table = runner.invoke(app, ["tools", "list", str(tools_file)])
    assert "Add two integers." in table.stdout


def test_a_tool_file_that_does_not_import_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_anywhere\n")
    result = runner.invoke(app, ["prompt", "hi", "-T", str(bad)])
    assert result.exit_code == 2
    assert "does not import" in result.stderr and "not_a_module_anywhere" in result.stderr
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    result = runner.invoke(app, ["tools", "list", str(syntax)])
    assert result.exit_code == 2 and "line 1" in result.stderr
    assert "Traceback" not in result.output


def test_a_signature_without_a_schema_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "untyped.py"
    bad.write_text("def lookup(key, *rest):\n    return key\n")
    result = runner.invoke(app, ["tools", "list", str(bad)])
    assert result.exit_code == 2
    assert "lookup" in result.stderr and "'key'" in result.stderr and "type hint" in result.stderr


def test_missing_tool_file_and_unknown_tool_choice(tools_file: Path) -> None:
    result = runner.invoke(app, ["prompt", "hi", "-T", "/nonexistent/tools.py"])
    assert result.exit_code == 2 and "does not exist" in result.stderr
    result = runner.invoke(app, ["prompt", "hi", "-T", str(tools_file), "--tool-choice", "nope"])
    assert result.exit_code == 2 and "nope" in result.output


def test_no_model_reachable_is_a_clear_error() -> None:
    # A port nothing listens on: the real OpenAI-compatible backend, a real refused connection.
    result = runner.invoke(app, ["prompt", "hi", "-m", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 1
    assert "no model reachable" in result.stderr and "127.0.0.1:9" in result.stderr


def test_unknown_model_spec_is_explained() -> None:
    result = runner.invoke(app, ["prompt", "hi", "-m", "gibberish"])
    assert result.exit_code == 1 and "not understood" in result.stderr


def test_logs_list_show_filter_and_json(scripted: Any, tools_file: Path) -> None:
    scripted("plain answer", calls(("add", {"a": 1, "b": 1})), "two")
    runner.invoke(app, ["prompt", "say something"])
    runner.invoke(app, ["prompt", "1+1", "-T", str(tools_file)])
    listed = runner.invoke(app, ["logs", "--json"])
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    # One row per prompt: the tool round and the answer are one row, its prompt kept.
    assert [(r["prompt"], r["text"]) for r in rows] == [
        ("1+1", "two"),
        ("say something", "plain answer"),
    ]
    only_add = runner.invoke(app, ["logs", "--tool", "add", "--json"])
    (called,) = [json.loads(line) for line in only_add.stdout.splitlines()]
    assert called["tool_calls"][0]["name"] == "add"
    assert called["tool_results"][0]["output"] == "2"
    shown = runner.invoke(app, ["logs", "show", str(called["id"])])
    assert shown.exit_code == 0 and "add" in shown.stdout and "result" in shown.stdout
    shown_json = runner.invoke(app, ["logs", "show", str(called["id"]), "--json"])
    assert json.loads(shown_json.stdout) == called
    table = runner.invoke(app, ["logs"])
    assert table.exit_code == 0 and "say something" in table.stdout
    missing = runner.invoke(app, ["logs", "show", "9999"])
    assert missing.exit_code == 1 and "no response 9999" in missing.stderr


def test_a_tool_choice_typo_lists_the_choices_and_the_near_miss(tools_file: Path) -> None:
    result = runner.invoke(app, ["prompt", "hi", "-T", str(tools_file), "--tool-choice", "requird"])
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "auto, none nor required" in said and "did you mean 'required'?" in said


def test_a_forced_tool_choice_without_tools_is_refused() -> None:
    result = runner.invoke(app, ["prompt", "hi", "--tool-choice", "required", "--no-log"])
    assert result.exit_code == 2
    assert "needs a tool to call" in " ".join(result.stderr.split())


@pytest.mark.parametrize("url", ["localhost:8080/v1", "ftp://host/v1", "http://"])
def test_a_base_url_without_its_scheme_says_how_to_write_it(url: str) -> None:
    from parlay import ConfigurationError, OpenAIBackend

    with pytest.raises(ConfigurationError, match="write it with its scheme"):
        OpenAIBackend("m", base_url=url)
