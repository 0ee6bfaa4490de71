"""The engine's settings are one value from every entry point: `parlay prompt`, `chat`
and `serve` take the same flags (declared once), and a value out of range is refused
with one message whether it comes from a flag, a variable or Python."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest
import typer
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from parlay.backends.scripted import ScriptedBackend
from parlay.backends.window import context_window
from parlay.cli.app import app
from parlay.cli.models import resolve_model
from parlay.engine.backend import PromptedBackend
from parlay.engine.config import EngineChanges, EngineConfig
from parlay.errors import ConfigurationError
from parlay.server.config import ServerConfig

runner = CliRunner()
# Flags that are a model's rather than the engine's, shared all the same.
MODEL_FLAGS = {"--threads", "--ctx", "--context-window"}


def _options(name: str) -> dict[str, tuple[Any, ...]]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return {
        p.opts[0]: (
            tuple(p.opts),
            p.help,
            p.envvar,
            str(p.display_type),
            p.min,
            p.max,
            p.default,
            p.multiple,
        )
        for p in group.commands[name].params
        if isinstance(p, TyperOption)
    }


def _engine_flags(options: dict[str, tuple[Any, ...]]) -> set[str]:
    return {flag for flag, (_, help_, *_) in options.items() if (help_ or "").startswith("Engine:")}


def test_prompt_chat_and_serve_offer_the_same_engine_settings() -> None:
    serve, prompt, chat = _options("serve"), _options("prompt"), _options("chat")
    engine = _engine_flags(serve)
    # Every setting `EngineChanges` holds is a flag of serve's (rules_off: --rule-off).
    fields = {a.name.replace("rules_off", "rule_off") for a in attrs.fields(EngineChanges)}
    assert {flag.removeprefix("--").replace("-", "_") for flag in engine} == fields
    assert _engine_flags(prompt) == engine
    for flag in engine | MODEL_FLAGS:
        assert prompt[flag] == serve[flag] == chat[flag], flag


@pytest.mark.parametrize("command", [["prompt", "hi"], ["serve"]])
def test_the_help_pages_show_the_same_engine_settings(command: list[str]) -> None:
    shown = runner.invoke(app, [command[0], "--help"], env={"COLUMNS": "300"}).stdout
    for flag in _engine_flags(_options("serve")) | MODEL_FLAGS:
        assert flag in shown, flag
    assert "placeholder|refuse" in shown and "fenced|json|typed" in shown


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [("min_call_confidence", 1.5, "--min-call-confidence"), ("max_retries", -1, "--max-retries")],
)
def test_an_out_of_range_setting_is_refused_with_one_message_from_every_entry_point(
    monkeypatch: pytest.MonkeyPatch, field: str, value: float, flag: str
) -> None:
    monkeypatch.setattr("parlay.cli.app.build_session", _no_session)
    setting: dict[str, Any] = {field: value}
    messages: set[str] = set()
    for make in (
        lambda: EngineConfig(**setting),
        lambda: EngineChanges(**setting),
        lambda: PromptedBackend(ScriptedBackend([]), **setting),
        lambda: PromptedBackend(ScriptedBackend([])).configure(**setting),
        lambda: ServerConfig.from_env({"PARLAY_SERVE_" + field.upper(): str(value)}),
        lambda: ServerConfig.from_env({}, **setting),
    ):
        with pytest.raises(ConfigurationError) as caught:
            make()
        messages.add(str(caught.value))
    assert len(messages) == 1, messages
    (message,) = messages
    assert field in message and str(value) in message
    for args in (["prompt", "hi"], ["chat"], ["serve"]):
        result = runner.invoke(app, [*args, flag, str(value)], input="")
        assert result.exit_code == 2, (args, result.output)
        assert f"parlay {args[0]}: {message}" in result.stderr, args


def _no_session(*_: object, **__: object) -> None:
    raise AssertionError("a session was built from a setting out of range")


def test_engine_settings_given_on_the_command_line_reach_the_engine() -> None:
    changes = EngineChanges(max_retries=0, min_call_confidence=0.25, images="refuse")
    backend = resolve_model("http://127.0.0.1:9/v1", engine=changes)
    assert isinstance(backend, PromptedBackend)
    assert backend.max_retries == 0 and backend.min_call_confidence == 0.25
    assert backend.options.images == "refuse"
    # Settings not given stay the backend's own (the engine's defaults here).
    assert backend.config.action_format is None and backend.rules.off == frozenset()


def test_a_server_window_for_the_embedded_model_is_refused_naming_ctx() -> None:
    with pytest.raises(ConfigurationError, match="--ctx"):
        resolve_model("embedded", context_window=4096)


def test_a_server_window_reaches_the_server_backend() -> None:
    backend = resolve_model("http://127.0.0.1:9/v1", context_window=4096)
    window = asyncio.run(context_window(backend))  # set, so the server is not asked
    assert window is not None and (window.tokens, window.source) == (4096, "set")


def test_the_engine_settings_reach_each_worker_process() -> None:
    # `parlay serve --workers N` hands its settings to each worker as JSON (server.run).
    config = ServerConfig.from_env(
        {}, upstream_url="http://up/v1", workers=2, max_retries=0, rules_off=("refusal",)
    )
    again = ServerConfig(**json.loads(json.dumps(attrs.asdict(config))))
    assert again == config and again.engine.max_retries == 0
