"""`prompt` and `chat` share one set of options, and turn the same flags into the same
`RunOptions` (each flag lands in its own field, not a neighbour's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import typer
from rich.console import Console
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from parlay.cli.app import app
from parlay.cli.options import RunOptions
from parlay.cli.protocol import CliSession
from parlay.engine.config import EngineChanges
from parlay.request import GenerationOptions

runner = CliRunner()
COMMANDS = {"prompt": ["prompt", "hi"], "chat": ["chat"]}

# One flag each, with a value unlike every default: a swapped field shows as a mismatch.
FLAGS: list[tuple[list[str], dict[str, Any]]] = [
    (["-m", "some-model"], {"model": "some-model"}),
    (["-s", "be brief"], {"system": "be brief"}),
    (["-T", "a.py", "-T", "b.py"], {"tool": (Path("a.py"), Path("b.py"))}),
    (["--functions", "def f() -> int: return 1"], {"functions": ("def f() -> int: return 1",)}),
    (["--mcp", "fs=npx server", "--mcp", "py s.py"], {"mcp": ("fs=npx server", "py s.py")}),
    (["--mcp-url", "http://h/mcp"], {"mcp_url": ("http://h/mcp",)}),
    (["--tool-timeout", "2.5"], {"tool_timeout": 2.5}),
    (["--tool-choice", "required"], {"tool_choice": "required"}),
    (["--chain-limit", "3"], {"chain_limit": 3}),
    (["--tools-debug"], {"tools_debug": True}),
    (["--tools-approve"], {"tools_approve": True}),
    (["--td"], {"tools_debug": True}),  # llm's short forms
    (["--ta"], {"tools_approve": True}),
    (["--no-stream"], {"no_stream": True}),
    (["--json"], {"json": True}),
    (["--prompted"], {"prompted": True}),
    (["--action-format", "json"], {"engine": {"action_format": "json"}}),
    (["--max-retries", "0"], {"engine": {"max_retries": 0}}),
    (["--min-call-confidence", "0.25"], {"engine": {"min_call_confidence": 0.25}}),
    (
        ["--rule-off", "refusal", "--rule-off", "invented_value"],
        {"engine": {"rules_off": ("refusal", "invented_value")}},
    ),
    (["--images", "refuse"], {"engine": {"images": "refuse"}}),
    (["--max-tokens", "7"], {"generation": {"max_tokens": 7}}),
    (["--temperature", "0.25"], {"generation": {"temperature": 0.25}}),
    # llm's -o KEY VALUE (and KEY=VALUE), each option read as its kind; stop repeats.
    (
        ["-o", "top_p", "0.5", "-o", "seed=3", "--option", "stop", "a=b", "-o", "stop", "\n"],
        {"generation": {"top_p": 0.5, "seed": 3, "stop": ("a=b", "\n")}},
    ),
    (["--no-log"], {"no_log": True}),
    (["--threads", "3"], {"threads": 3}),
    (["--ctx", "2048"], {"ctx": 2048}),
    (["--context-window", "4096"], {"context_window": 4096}),
    (["-c"], {"continue_conversation": True}),
    (["--cid", "abc"], {"cid": "abc"}),
    (["--schema", "{}"], {"schema": "{}"}),
]


def expected(*fields: dict[str, Any]) -> RunOptions:
    """The RunOptions of these flags' fields together (the engine's in one value, and the
    generation options in another)."""
    merged: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {"engine": {}, "generation": {}}
    for each in fields:
        merged.update({k: v for k, v in each.items() if k not in parts})
        for part, values in parts.items():
            values.update(each.get(part, {}))
    engine, generation = EngineChanges(**parts["engine"]), parts["generation"]
    return RunOptions(**merged, engine=engine, generation=GenerationOptions(**generation))


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[RunOptions]:
    """The RunOptions each run builds its session from (the run then stops, no model)."""
    seen: list[RunOptions] = []

    def record(opts: RunOptions, stderr: Console, **_: Any) -> CliSession:
        seen.append(opts)
        raise typer.Exit(0)

    monkeypatch.setattr("parlay.cli.app.build_session", record)
    return seen


def test_every_field_has_a_flag() -> None:
    assert {name for _, fields in FLAGS for name in fields} == set(
        a.name for a in attrs.fields(RunOptions)
    )
    engine = {name for _, fields in FLAGS for name in fields.get("engine", {})}
    assert engine == {a.name for a in attrs.fields(EngineChanges)}


@pytest.mark.parametrize(("flags", "fields"), FLAGS, ids=[f[0][0] for f in FLAGS])
def test_prompt_and_chat_build_the_same_options_from_a_flag(
    built: list[RunOptions], flags: list[str], fields: dict[str, Any]
) -> None:
    for args in COMMANDS.values():
        result = runner.invoke(app, [*args, *flags], input="")
        assert result.exit_code == 0, result.output
    assert built == [expected(fields)] * 2


def test_prompt_and_chat_build_the_same_options_from_every_flag(built: list[RunOptions]) -> None:
    flags = [arg for args, _ in FLAGS for arg in args]
    for args in COMMANDS.values():
        assert runner.invoke(app, [*args, *flags], input="").exit_code == 0
    assert built == [expected(*(fields for _, fields in FLAGS))] * 2
    assert built[0] != RunOptions()
    assert built[0].engine.given().keys() == {a.name for a in attrs.fields(EngineChanges)}


def _options(name: str) -> list[tuple[Any, ...]]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    command = group.commands[name]
    return [
        (p.name, tuple(p.opts), tuple(p.secondary_opts), p.default, p.help)
        for p in command.params
        if isinstance(p, TyperOption)
    ]


def test_prompt_and_chat_have_the_same_options_in_the_same_order() -> None:
    prompt, chat = _options("prompt"), _options("chat")
    assert prompt == chat
    assert [o[1] for o in prompt][:3] == [("--model", "-m"), ("--system", "-s"), ("--tool", "-T")]


@pytest.mark.parametrize("command", COMMANDS)
def test_action_format_in_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--action-format" in result.stdout and "fenced|json|typed" in result.stdout
    assert "--prompted" in result.stdout  # the options around it are still there


@pytest.mark.parametrize("command", COMMANDS)
def test_a_wrong_action_format_names_the_choices(built: list[RunOptions], command: str) -> None:
    result = runner.invoke(app, [*COMMANDS[command], "--action-format", "xml"], input="")
    assert result.exit_code == 2
    assert "--action-format" in result.stderr and "'xml'" in result.stderr
    assert all(f"'{choice}'" in result.stderr for choice in ("fenced", "json", "typed"))
    assert built == []  # rejected before any session is built


@pytest.mark.parametrize(
    ("opts", "temperature"),
    [
        (RunOptions(), 0),  # the embedded model, greedy as in start_session()
        (RunOptions(generation=GenerationOptions(max_tokens=9)), 0),
        (RunOptions(generation=GenerationOptions(temperature=0.7)), 0.7),
        (RunOptions(model="http://127.0.0.1:9/v1"), None),  # a server's own default
    ],
)
def test_the_embedded_model_answers_greedily_unless_told(
    opts: RunOptions, temperature: Any
) -> None:
    from parlay.cli.options import _options

    assert _options(opts).temperature == temperature


def _command_paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, sub in getattr(group, "commands", {}).items():
        found.extend(_command_paths(sub, (*prefix, name)))
    return found


def test_flags_are_plain_switches_in_every_help_page() -> None:
    paths = _command_paths(typer.main.get_command(app))
    assert ("prompt",) in paths and ("serve",) in paths and ("logs", "show") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, path
        assert "<bool>" not in result.stdout, path
        assert "--help" in result.stdout
    shown = runner.invoke(app, ["prompt", "--help"], env={"COLUMNS": "200"}).stdout
    assert "--tools-debug,--td" in shown and "--tools-approve,--ta" in shown
    assert "<int range>" in shown  # options that take a value still show its type
