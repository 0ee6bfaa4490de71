"""`-m/--model` resolution: each spelling gives the backend it promises (no network)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from parlay.backends.anthropic import AnthropicBackend
from parlay.backends.openai import OpenAIBackend
from parlay.backends.prompted import PromptedBackend
from parlay.cli.app import app
from parlay.cli.models import resolve_model
from parlay.errors import ConfigurationError


def test_url_is_an_openai_compatible_server_with_native_tools() -> None:
    backend = resolve_model("http://127.0.0.1:8080/v1")
    assert isinstance(backend, OpenAIBackend)
    assert backend.base_url == "http://127.0.0.1:8080/v1" and backend.model is None
    assert backend.capabilities.native_tools


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
