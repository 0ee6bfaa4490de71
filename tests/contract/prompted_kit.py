"""A scripted plain-chat model behind PromptedBackend, and what the tests read of a reply."""

from __future__ import annotations

import json

from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.events import Event, Finish, TextDelta, ToolCallEnd
from parlay.request import ChatRequest, ToolChoice, ToolSpec

from .conftest import TOOLS

PLAIN = Capabilities(native_tools=False, json_schema=False)
PLAIN_SCHEMA = Capabilities(native_tools=False, json_schema=True)


def block(name: str, **arguments: object) -> str:
    return "```json action\n" + json.dumps({"tool": name, "parameters": arguments}) + "\n```"


def scripted(*replies: str, caps: Capabilities = PLAIN) -> ScriptedBackend:
    return ScriptedBackend(list(replies), capabilities=caps, chunk_size=3)


async def run(backend: PromptedBackend, request: ChatRequest) -> tuple[list[Event], Finish]:
    events = [event async for event in backend.stream(request)]
    finish = events[-1]
    assert isinstance(finish, Finish)
    assert sum(isinstance(e, Finish) for e in events) == 1
    return events, finish


def text_of(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[Event]) -> list[tuple[str, dict]]:
    return [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallEnd)]


def ask(
    text: str, choice: ToolChoice | str | None = None, tools: tuple[ToolSpec, ...] = TOOLS
) -> ChatRequest:
    return ChatRequest((UserMessage(text),), tools, ToolChoice.coerce(choice))
