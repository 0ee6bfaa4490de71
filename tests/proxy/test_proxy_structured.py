"""Structured output and parallel-call settings through the proxy: what an SDK client
asks for reaches the engine's grammar."""

from __future__ import annotations

import json
from typing import Any

import openai
from proxy_harness import running
from pydantic import BaseModel

from parlay import ScriptedBackend
from parlay.backends.base import Capabilities
from parlay.engine.backend import PromptedBackend
from parlay.server import create_app

GRAMMAR = Capabilities(native_tools=False, json_schema=True)
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
]


class Report(BaseModel):
    city: str
    temperature: int


def test_an_openai_client_gets_its_schema_with_tools_offered() -> None:
    inner = ScriptedBackend(['{"city": "Oslo", "temperature": 4}'], capabilities=GRAMMAR)
    app = create_app(PromptedBackend(inner))
    with running(app) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
        reply = client.beta.chat.completions.parse(
            model="any",
            messages=[{"role": "user", "content": "Weather in Oslo, as a report."}],
            tools=TOOLS,
            response_format=Report,
        )
    assert reply.choices[0].message.parsed == Report(city="Oslo", temperature=4)
    grammar = inner.requests[0].response_format
    assert grammar is not None
    assert "temperature" in json.dumps(grammar.schema) and "get_weather" in json.dumps(
        grammar.schema
    )


def _actions_allowed(inner: ScriptedBackend) -> bool:
    grammar = inner.requests[-1].response_format
    assert grammar is not None
    return '"tool_calls"' in json.dumps(grammar.schema)


def test_clients_that_forbid_parallel_calls_get_a_grammar_for_one() -> None:
    import anthropic

    answer = '{"type": "final", "content": "Sunny."}'
    inner = ScriptedBackend([answer] * 4, capabilities=GRAMMAR)
    messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    tools_an: list[Any] = [
        {"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}
    ]
    with running(create_app(PromptedBackend(inner))) as server:
        oa = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
        an = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
        oa.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        assert _actions_allowed(inner)
        oa.chat.completions.create(
            model="m", messages=messages, tools=TOOLS, parallel_tool_calls=False
        )
        assert not _actions_allowed(inner)
        an.messages.create(model="m", max_tokens=50, messages=messages, tools=tools_an)
        assert _actions_allowed(inner)
        an.messages.create(
            model="m",
            max_tokens=50,
            messages=messages,
            tools=tools_an,
            tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        )
        assert not _actions_allowed(inner)
