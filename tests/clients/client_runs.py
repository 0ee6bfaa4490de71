"""Each Python client's own tool loop, written the way its docs show, over any set of
tools: the note task against the scripted upstream, a weather question on the embedded
model. Each returns the answer that reached the client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

ROUNDS = 5  # more than a task needs: a client stuck in a loop fails, not hangs


class ToolKit:
    """Typed Python functions (what the frameworks read) and their JSON schemas (what the
    SDKs send), which must describe the same tools."""

    def __init__(self, functions: list[Callable[..., str]], specs: list[dict[str, Any]]) -> None:
        self.functions = functions
        self.specs = specs
        assert [f.__name__ for f in functions] == [s["name"] for s in specs]

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        tool = {f.__name__: f for f in self.functions}[name]
        return tool(**arguments)

    def openai_tools(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": spec} for spec in self.specs]

    def responses_tools(self) -> list[dict[str, Any]]:
        return [{"type": "function", **spec} for spec in self.specs]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return [
            {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
            for s in self.specs
        ]


def openai_chat(url: str, key: str, kit: ToolKit, prompt: str, stream: bool) -> str:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=300)
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(ROUNDS):
        kwargs: dict[str, Any] = {"model": "parlay", "messages": messages,
                                  "tools": kit.openai_tools()}  # fmt: skip
        if stream:
            with client.chat.completions.stream(**kwargs) as events:
                message = events.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(**kwargs).choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            output = kit.run(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    raise AssertionError("the tool loop did not end")


def openai_responses(url: str, key: str, kit: ToolKit, prompt: str, stream: bool) -> str:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=300)
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(ROUNDS):
        kwargs: dict[str, Any] = {"model": "parlay", "input": items,
                                  "tools": kit.responses_tools()}  # fmt: skip
        if stream:
            with client.responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**kwargs)
        assert response.status == "completed", response.status
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        items.extend(item.model_dump(exclude_none=True) for item in response.output)
        for call in calls:
            output = kit.run(call.name, json.loads(call.arguments))
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
    raise AssertionError("the tool loop did not end")


def anthropic_messages(url: str, key: str, kit: ToolKit, prompt: str, stream: bool) -> str:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, timeout=300)
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(ROUNDS):
        kwargs: dict[str, Any] = {"model": "parlay", "max_tokens": 1024, "messages": messages,
                                  "tools": kit.anthropic_tools()}  # fmt: skip
        if stream:
            with client.messages.stream(**kwargs) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": kit.run(u.name, u.input)}
            for u in uses
        ]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the tool loop did not end")


def openai_agent(model: Any, kit: ToolKit, prompt: str, stream: bool) -> str:
    """openai-agents' Runner; `model` is a Model object, or a name for the default
    (Responses) model."""
    import agents

    agents.set_tracing_disabled(True)  # it would send traces to the vendor
    agent = agents.Agent(
        name="assistant",
        instructions="Use the tools to answer.",
        model=model,
        tools=[agents.function_tool(f) for f in kit.functions],
    )

    async def streamed() -> str:
        run = agents.Runner.run_streamed(agent, prompt)
        async for _ in run.stream_events():
            pass
        return str(run.final_output)

    if stream:
        return asyncio.run(streamed())
    return str(agents.Runner.run_sync(agent, prompt).final_output)


def pydantic_ai(url: str, key: str, kit: ToolKit, prompt: str, stream: bool) -> str:
    from pydantic_ai import Agent, AgentRunResultEvent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=url + "/v1", api_key=key)
    agent = Agent(OpenAIChatModel("parlay", provider=provider), tools=kit.functions)
    if not stream:
        return str(agent.run_sync(prompt).output)

    async def streamed() -> str:
        output = ""
        async with agent.run_stream_events(prompt) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    output = str(event.result.output)
        return output

    return asyncio.run(streamed())


def langchain(chat: Any, kit: ToolKit, tools: list[dict[str, Any]], prompt: str,
              stream: bool) -> str:  # fmt: skip
    """LangChain's own loop: bind the tools, ask, run each call, hand back ToolMessages."""
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = chat.bind_tools(tools)
    messages: list[Any] = [HumanMessage(prompt)]
    for _ in range(ROUNDS):
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
            output = kit.run(call["name"], call["args"])
            messages.append(ToolMessage(output, tool_call_id=call["id"]))
    raise AssertionError("the tool loop did not end")


def langchain_chat(kind: str, url: str, key: str) -> Any:
    """ChatOpenAI, ChatOpenAI over the Responses API, or ChatAnthropic, at the proxy."""
    if kind == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model_name="parlay", base_url=url, api_key=key, max_retries=0,
                             default_request_timeout=300)  # fmt: skip
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="parlay", base_url=url + "/v1", api_key=key, timeout=300,
                      use_responses_api=kind == "responses")  # fmt: skip
