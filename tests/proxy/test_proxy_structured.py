"""Structured output with tools through the proxy: an OpenAI client's `response_format`
survives under the engine's action grammar, and the answer parses with the SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
from proxy_harness import running
from pydantic import BaseModel

from parlay import ScriptedBackend
from parlay.backends.base import Capabilities
from parlay.backends.prompted import PromptedBackend
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
