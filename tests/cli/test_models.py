"""`-m/--model` resolution: each spelling gives the backend it promises (no network)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from rich.console import Console
from typer.testing import CliRunner

from parlay.backends.anthropic import AnthropicBackend
from parlay.backends.local import LocalBackend
from parlay.backends.openai import OpenAIBackend
from parlay.cli.app import app
from parlay.cli.models import resolve_model
from parlay.cli.options import RunOptions, build_session
from parlay.engine.backend import PromptedBackend
from parlay.engine.config import EngineChanges
from parlay.engine.contract.pieces import FORMATS, ActionFormat
from parlay.errors import ConfigurationError
from parlay.start import EMBEDDED_ACTION_FORMAT


def test_url_is_an_openai_compatible_server_with_native_tools() -> None:
    backend = resolve_model("http://127.0.0.1:8080/v1")
    assert isinstance(backend, OpenAIBackend)
    assert backend.base_url == "http://127.0.0.1:8080/v1" and backend.model is None
    assert backend.capabilities.native_tools


def test_a_url_whose_path_ends_in_gguf_is_a_server_not_a_model_file() -> None:
    # A server may name its model by the file it loaded: the URL still wins.
    backend = resolve_model("http://127.0.0.1:8080/models/qwen.gguf")
    assert isinstance(backend, OpenAIBackend)


def test_name_at_url_and_prompted() -> None:
    backend = resolve_model("qwen@http://user:pw@host:8080/v1", use_prompted=True)
    assert isinstance(backend, PromptedBackend)
    inner = backend.inner
    assert isinstance(inner, OpenAIBackend)
    assert (inner.model, inner.base_url) == ("qwen", "http://user:pw@host:8080/v1")
    assert not inner.capabilities.native_tools


def test_openai_and_anthropic_names() -> None:
    openai = resolve_model("openai:gpt-4o-mini")
    assert isinstance(openai, OpenAIBackend) and openai.model == "gpt-4o-mini"
    anthropic = resolve_model("anthropic:claude-x")
    assert isinstance(anthropic, AnthropicBackend) and anthropic.model == "claude-x"
    with pytest.raises(ConfigurationError, match="needs a model name"):
        resolve_model("anthropic")


def test_embedded_is_the_default_and_already_prompted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    for spec in (None, "", "embedded", "local"):
        backend = resolve_model(spec, use_prompted=True)
        assert isinstance(backend, PromptedBackend)
        assert not isinstance(backend.inner, PromptedBackend)  # not wrapped twice


def test_missing_gguf_and_nonsense_are_explained() -> None:
    with pytest.raises(ConfigurationError, match="no such model file"):
        resolve_model("/nowhere/model.gguf")
    with pytest.raises(ConfigurationError, match="not understood"):
        resolve_model("gibberish")


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("parlay ")


def test_the_action_format_choices_are_the_engines() -> None:
    assert get_args(ActionFormat) == FORMATS


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    # resolve_model only checks that the file exists; no server starts until a request.
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture
def no_env_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)


def _inner_type(spec: str) -> type:
    return OpenAIBackend if "://" in spec else LocalBackend


@pytest.mark.usefixtures("no_env_server")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("spec", ["embedded", "http://127.0.0.1:8080/v1", "GGUF"])
def test_action_format_puts_the_model_behind_the_engine_in_that_format(
    spec: str, fmt: ActionFormat, gguf: Path
) -> None:
    spec = str(gguf) if spec == "GGUF" else spec
    backend = resolve_model(spec, engine=EngineChanges(action_format=fmt))
    assert isinstance(backend, PromptedBackend) and backend.action_format == fmt
    assert isinstance(backend.inner, _inner_type(spec))  # wrapped once, around the model
    # the same through build_session, as `prompt` and `chat` build it
    session = build_session(
        RunOptions(model=spec, engine=EngineChanges(action_format=fmt), no_log=True), Console()
    )
    assert isinstance(session.backend, PromptedBackend)
    assert session.backend.action_format == fmt
    assert isinstance(session.backend.inner, _inner_type(spec))


@pytest.mark.usefixtures("no_env_server")
@pytest.mark.parametrize("spec", ["embedded", "http://127.0.0.1:8080/v1", "GGUF"])
def test_without_action_format_the_engine_picks_its_default(spec: str, gguf: Path) -> None:
    spec = str(gguf) if spec == "GGUF" else spec
    backend = resolve_model(spec, use_prompted=True)
    assert isinstance(backend, PromptedBackend)
    # The embedded SmolLM2 keeps its own format (json); any other model, the engine's.
    default = PromptedBackend(backend.inner).action_format
    assert backend.action_format == (EMBEDDED_ACTION_FORMAT if spec == "embedded" else default)


def test_action_format_puts_a_native_tools_backend_behind_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    native = resolve_model("http://127.0.0.1:8080/v1")
    assert not isinstance(native, PromptedBackend)
    backend = resolve_model("http://127.0.0.1:8080/v1", engine=EngineChanges(action_format="json"))
    assert isinstance(backend, PromptedBackend) and backend.action_format == "json"
    # the embedded spelling when $PARLAY_OPENAI_BASE_URL names a server with native tools
    monkeypatch.setenv("PARLAY_OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert not isinstance(resolve_model("embedded"), PromptedBackend)
    backend = resolve_model("embedded", engine=EngineChanges(action_format="fenced"))
    assert isinstance(backend, PromptedBackend) and backend.action_format == "fenced"
    assert isinstance(backend.inner, OpenAIBackend)


def test_rule_off_puts_the_model_behind_the_engine_with_that_rule_off() -> None:
    backend = resolve_model(
        "http://127.0.0.1:8080/v1", engine=EngineChanges(rules_off=("refusal",))
    )
    assert isinstance(backend, PromptedBackend) and not backend.rules.on("refusal")
    with pytest.raises(ConfigurationError, match="refusl"):
        resolve_model("http://127.0.0.1:8080/v1", engine=EngineChanges(rules_off=("refusl",)))
