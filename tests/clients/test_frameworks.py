"""The agent frameworks, unmodified, doing the note task through `parlay serve` in both
modes, streaming and not: openai-agents, pydantic-ai and LangChain, each running its own
tool loop with tools written the framework's way."""

from __future__ import annotations

import client_runs
import pytest
from client_harness import Proxy
from client_task import PROMPT, NoteTask

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@STREAM
def test_openai_agents_chat_completions_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    import agents
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    model = agents.OpenAIChatCompletionsModel(model="parlay", openai_client=client)
    task.check(client_runs.openai_agent(model, task, PROMPT, stream))


@STREAM
def test_openai_agents_default_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    """The SDK's default model (a model name, the default client) speaks the Responses
    API."""
    import agents
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    task.check(client_runs.openai_agent("parlay", task, PROMPT, stream))


@STREAM
def test_pydantic_ai_openai_chat_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    task.check(client_runs.pydantic_ai(proxy.url, proxy.key, task, PROMPT, stream))


@STREAM
def test_langchain_chat_openai(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    chat = client_runs.langchain_chat("chat", proxy.url, proxy.key)
    task.check(client_runs.langchain(chat, task, task.openai_tools(), PROMPT, stream))


@STREAM
def test_langchain_chat_openai_responses(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    chat = client_runs.langchain_chat("responses", proxy.url, proxy.key)
    task.check(client_runs.langchain(chat, task, task.openai_tools(), PROMPT, stream))


@STREAM
def test_langchain_chat_anthropic(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    chat = client_runs.langchain_chat("anthropic", proxy.url, proxy.key)
    task.check(client_runs.langchain(chat, task, task.anthropic_tools(), PROMPT, stream))
