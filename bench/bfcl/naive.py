"""The naive baseline: one system message with the tools' JSON and one fenced example.

What anyone would write first: the functions as JSON, one example of a call in a
```` ```json ```` block, "one block per call", and "answer in plain text" otherwise. The
question's own system text follows in the same (single) system message. The reply is
read for every fenced block that holds JSON (or, with no block, the whole reply as
JSON): an object with `name` and `arguments` (or `parameters`) is a call, and so is each
such object of a list. Nothing else: no grammar, no retry.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from bench.bfcl.data import Question
from bench.bfcl.outcome import Reply
from bench.bfcl.systems import BackendSystem, Setup, stream_reply
from parlay.backends.base import PLAIN_CHAT
from parlay.backends.openai import OpenAIBackend
from parlay.context import Message, SystemMessage
from parlay.request import ChatRequest

PROMPT_VERSION = 1
EXAMPLE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
INSTRUCTIONS = (
    "You can call these functions:\nFUNCTIONS\n\n"
    "To call a function, reply with a JSON block like this example:\n"
    "```json\n" + EXAMPLE + "\n```\n"
    "Write one block per call. If no function fits, answer in plain text."
)
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.DOTALL)


def prompt(question: Question) -> tuple[Message, ...]:
    """The question's messages behind one system message that offers its functions."""
    functions = [
        {"name": f["name"], "description": f.get("description", ""), "parameters": schema}
        for f, schema in zip(
            question.offered, (t.parameters for t in question.offered_tools), strict=True
        )
    ]
    system = INSTRUCTIONS.replace("FUNCTIONS", json.dumps(functions, ensure_ascii=False))
    own = [m.content for m in question.messages if isinstance(m, SystemMessage)]
    if own:
        system += "\n\n" + "\n\n".join(own)
    rest = tuple(m for m in question.messages if not isinstance(m, SystemMessage))
    return (SystemMessage(system), *rest)


def _calls_in(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _calls_in(item)
        return
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI's habit: the arguments as a JSON string
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    yield value["name"], arguments


def parse_calls(text: str) -> tuple[tuple[str, Any], ...]:
    """Every call in the reply's JSON blocks (the whole reply when it has no block)."""
    blocks = _FENCE.findall(text) or [text]
    calls: list[tuple[str, Any]] = []
    for block in blocks:
        try:
            value = json.loads(block.strip())
        except ValueError:
            continue
        calls.extend(_calls_in(value))
    return tuple(calls)


class NaiveSystem(BackendSystem):
    async def answer(self, question: Question) -> Reply:
        asked = self.request(question)
        request = ChatRequest(prompt(question), options=asked.options, extra_body=asked.extra_body)
        reply = await stream_reply(self.backend, request)
        if reply.error:
            return reply
        return Reply(
            parse_calls(reply.text),
            reply.text,
            seconds=reply.seconds,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            requests=1,
        )


def naive_system(setup: Setup) -> NaiveSystem:
    backend = OpenAIBackend("model", base_url=setup.base_url, api_key="", capabilities=PLAIN_CHAT)
    config = setup.config("naive", prompt_version=PROMPT_VERSION, max_tokens=setup.max_tokens)
    return NaiveSystem("naive", backend, config, setup.max_tokens, setup.extra_body)
