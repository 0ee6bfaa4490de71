"""A scripted OpenAI-compatible upstream for the client suite: it plays a model that
does a task of three rounds (call a tool, read its result, call a second tool, answer).

Which round it is in comes from the request alone, as a real model's would: each step's
tool prints a token (`done-alpha`, `done-bravo`) that appears nowhere else, so the step is
the number of those tokens the conversation holds. The same script is played natively
(`tool_calls`, when the request offers tools) or as a plain-chat model under parlay's
contract (action text the engine must parse: typed JSON under a grammar, a fenced block
without one), so in prompted mode what a client sees went through the engine's parser.

A request that offers none of the script's tools (a client's side request: a title, a
summary) gets a short plain answer. Every request is kept, for the tests to read.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from attrs import define, field, frozen
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@frozen
class Step:
    tool: str
    arguments: dict[str, Any]
    done: str  # the token the tool's result holds once the step ran


@define
class Script:
    steps: tuple[Step, ...]
    answer: str
    # A reasoning model's: every reply opens with `<think>{reasoning}</think>` in its
    # text and carries `reasoning_content` beside it (as llama.cpp and vLLM send).
    reasoning: str = ""

    def tools(self) -> set[str]:
        return {s.tool for s in self.steps}


@define
class Upstream:
    script: Script | None = None
    url: str = ""  # set once it listens
    requests: list[dict[str, Any]] = field(factory=list)
    _lock: threading.Lock = field(factory=threading.Lock)

    def play(self, script: Script | None) -> None:
        with self._lock:
            self.script = script
            self.requests.clear()

    # -- deciding --------------------------------------------------------------------
    def reply(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """The text and the native calls of the reply to `body`."""
        with self._lock:
            self.requests.append(body)
            script = self.script
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        if script is None or not any(
            name in text or name in json.dumps(body.get("tools", [])) for name in script.tools()
        ):
            return "OK.", []
        done = sum(1 for step in script.steps if step.done in _without_calls(body))
        native = bool(body.get("tools"))
        if done >= len(script.steps):
            if native or not body.get("response_format"):
                return script.answer, []
            return json.dumps({"type": "final", "content": script.answer}), []
        step = script.steps[done]
        call_id = f"call_{step.done.replace('-', '_')}"
        if native:
            arguments = json.dumps(step.arguments)
            return "", [{"id": call_id, "name": step.tool, "arguments": arguments}]
        action = {
            "type": "tool_call",
            "tool": {"tool_name": step.tool, "arguments": step.arguments},
        }
        if body.get("response_format"):
            return json.dumps(action), []
        fenced = {"tool": step.tool, "args": step.arguments}
        return f"```json action\n{json.dumps(fenced)}\n```", []

    # -- the wire --------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        body = await request.json()
        text, calls = self.reply(body)
        finish = "tool_calls" if calls else "stop"
        thought = self.script.reasoning if self.script is not None else ""
        if thought:
            text = f"<think>{thought} (in the text)</think>\n\n{text}"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if thought:
                message["reasoning_content"] = f"{thought} (in reasoning_content)"
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls
                ]
            return JSONResponse(
                {
                    "id": "chatcmpl-script",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model") or "scripted",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            )
        chunks = _chunks(text, calls, finish, thought)
        return StreamingResponse(chunks, media_type="text/event-stream")

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )


def _without_calls(body: dict[str, Any]) -> str:
    """The conversation's text but the assistant's own turns (whose calls carry the
    arguments, never a step's token)."""
    kept = [m for m in body.get("messages", []) if m.get("role") != "assistant"]
    return json.dumps(kept, ensure_ascii=False)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-script",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def _chunks(
    text: str, calls: list[dict[str, Any]], finish: str, thought: str = ""
) -> Iterator[str]:
    yield _chunk({"role": "assistant", "content": ""})
    if thought:
        yield _chunk({"reasoning_content": f"{thought} (in reasoning_content)"})
    for start in range(0, len(text), 12):  # a few characters at a time, as a model writes
        yield _chunk({"content": text[start : start + 12]})
    for index, call in enumerate(calls):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield _chunk({"tool_calls": [head]})
        arguments = call["arguments"]
        for start in range(0, len(arguments), 10):
            part = {"index": index, "function": {"arguments": arguments[start : start + 10]}}
            yield _chunk({"tool_calls": [part]})
    yield _chunk({}, finish)
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    yield (
        "data: "
        + json.dumps(
            {
                "id": "chatcmpl-script",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "scripted",
                "choices": [],
                "usage": usage,
            }
        )
        + "\n\n"
    )
    yield "data: [DONE]\n\n"


def wait_until(check: Any, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
