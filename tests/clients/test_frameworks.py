"""The agent frameworks, unmodified, doing the note task through `parlay serve` in both
modes, streaming and not: openai-agents, pydantic-ai and LangChain, each running its own
tool loop with tools written the framework's way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from client_harness import Proxy
from client_task import PROMPT, NoteTask, anthropic_tools, openai_tools

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


def note_tools(task: NoteTask) -> list[Callable[[str], str]]:
    """The task's two tools as plain typed functions, the form every framework reads."""

    def save_note(title: str) -> str:
        """Save an empty note under a title.

        Args:
            title: The note's title.
        """
        return task.save_note(title)

    def archive_note(title: str) -> str:
        """Move a saved note into the archive.

        Args:
            title: The note's title.
        """
        return task.archive_note(title)

    return [save_note, archive_note]


# -- openai-agents ---------------------------------------------------------------------


def run_openai_agent(model: Any, task: NoteTask, stream: bool) -> str:
    import agents

    agents.set_tracing_disabled(True)  # it would send traces to the vendor
    agent = agents.Agent(
        name="notes",
        instructions="You keep notes.",
        model=model,
        tools=[agents.function_tool(f) for f in note_tools(task)],
    )

    async def streamed() -> str:
        run = agents.Runner.run_streamed(agent, PROMPT)
        async for _ in run.stream_events():
            pass
        return str(run.final_output)

    if stream:
        return asyncio.run(streamed())
    return str(agents.Runner.run_sync(agent, PROMPT).final_output)


@STREAM
def test_openai_agents_chat_completions_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    import agents
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    model = agents.OpenAIChatCompletionsModel(model="parlay", openai_client=client)
    task.check(run_openai_agent(model, task, stream))


@STREAM
def test_openai_agents_default_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    """The SDK's default model (a model name, the default client) speaks the Responses
    API."""
    import agents
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    task.check(run_openai_agent("parlay", task, stream))


# -- pydantic-ai -----------------------------------------------------------------------


@STREAM
def test_pydantic_ai_openai_chat_model(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=proxy.url + "/v1", api_key=proxy.key)
    agent = Agent(OpenAIChatModel("parlay", provider=provider), tools=note_tools(task))
    if not stream:
        task.check(agent.run_sync(PROMPT).output)
        return

    async def streamed() -> str:
        from pydantic_ai import AgentRunResultEvent

        output = ""
        async with agent.run_stream_events(PROMPT) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    output = event.result.output
        return output

    task.check(asyncio.run(streamed()))


# -- LangChain -------------------------------------------------------------------------


def run_langchain(chat: Any, task: NoteTask, tools: list[dict[str, Any]], stream: bool) -> str:
    """LangChain's own loop: bind the tools, ask, run each call, hand back ToolMessages."""
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = chat.bind_tools(tools)
    messages: list[Any] = [HumanMessage(PROMPT)]
    for _ in range(5):
        if stream:
            reply = None
            for chunk in bound.stream(messages):
                reply = chunk if reply is None else reply + chunk
        else:
            reply = bound.invoke(messages)
        assert reply is not None
        if not reply.tool_calls:
            return str(reply.text)
        messages.append(reply)
        for call in reply.tool_calls:
            output = task.run(call["name"], call["args"])
            messages.append(ToolMessage(output, tool_call_id=call["id"]))
    raise AssertionError("the tool loop did not end")


@STREAM
def test_langchain_chat_openai(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model="parlay", base_url=proxy.url + "/v1", api_key=proxy.key)
    task.check(run_langchain(chat, task, openai_tools(), stream))


@STREAM
def test_langchain_chat_openai_responses(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model="parlay", base_url=proxy.url + "/v1", api_key=proxy.key, use_responses_api=True
    )
    task.check(run_langchain(chat, task, openai_tools(), stream))


@STREAM
def test_langchain_chat_anthropic(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    from langchain_anthropic import ChatAnthropic

    chat = ChatAnthropic(
        model_name="claude-parlay", base_url=proxy.url, api_key=proxy.key, max_retries=0
    )
    task.check(run_langchain(chat, task, anthropic_tools(), stream))
