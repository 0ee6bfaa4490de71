"""A request over the model's window, as each client meets it: shrunk where parlay's own
additions can go (and named in `x-parlay-shrunk`), else the client's own overflow error
(Anthropic's "prompt is too long: N tokens > M maximum", OpenAI's and Responses'
`context_length_exceeded`), never "the upstream refused"; the same for a model server's
own overflow 400. A grammar the model server refused is not asked for again."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from proxy_harness import running

from parlay import Capabilities, OpenAIBackend, PromptedBackend
from parlay.backends.scripted import ScriptedBackend
from parlay.backends.tokens import CountMethod, TokenCount
from parlay.backends.window import ContextWindow
from parlay.errors import BackendConnectionError, BackendStatusError, BackendTimeoutError
from parlay.request import ChatRequest
from parlay.server import create_app
from parlay.server.errors import classify

DESCRIPTION = "Runs a shell command.\n\n" + "Quote paths that hold spaces. " * 150
TOOL_OA = {
    "type": "function",
    "function": {
        "name": "Bash",
        "description": DESCRIPTION,
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
TOOL_AN = {
    "name": "Bash",
    "description": DESCRIPTION,
    "input_schema": TOOL_OA["function"]["parameters"],  # type: ignore[index]
}
TOOL_RS = {"type": "function", **TOOL_OA["function"]}  # type: ignore[dict-item]
SMALL = "list the files"
HUGE = "Here is my whole log, read it all. " + "log line " * 3000


class Windowed(ScriptedBackend):
    """A plain-chat model with a window and an exact four-characters-a-token tokenizer."""

    def __init__(self, window: int) -> None:
        super().__init__(lambda request: "Done.", capabilities=Capabilities(False, False))
        self.window = window

    async def context_window(self) -> ContextWindow:
        return ContextWindow(self.window, "test")

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        tokens = sum(len(m.content) // 4 + 4 for m in request.messages)
        return TokenCount(tokens, CountMethod.TOKENIZER)


@contextmanager
def served(backend: Any) -> Iterator[str]:
    with running(create_app(backend)) as server:
        yield server.url


def post(url: str, api: str, text: str, stream: bool) -> httpx.Response:
    if api == "anthropic":
        body: dict[str, Any] = {"tools": [TOOL_AN], "max_tokens": 64000}
        body["messages"] = [{"role": "user", "content": text}]
        path = "/v1/messages"
    elif api == "openai":
        body = {"tools": [TOOL_OA], "messages": [{"role": "user", "content": text}]}
        path = "/v1/chat/completions"
    else:
        body = {"tools": [TOOL_RS], "input": text}
        path = "/v1/responses"
    body.update(model="m", stream=stream)
    return httpx.post(url + path, json=body, timeout=30)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_claude_codes_first_request_on_a_small_window_is_shrunk_to_fit(stream: bool) -> None:
    inner = Windowed(1024)
    with served(PromptedBackend(inner, constrained=False)) as url:
        reply = post(url, "anthropic", SMALL, stream)
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-parlay-shrunk"] == "examples,descriptions"
    # What the prompt came to against the window, for whoever sizes a client's context.
    tokens, method = reply.headers["x-parlay-prompt-tokens"].split("; ")
    assert int(tokens) <= 1024 - 256 and method == "tokenizer"
    assert reply.headers["x-parlay-context-window"] == "1024"
    sent = "\n".join(m.content for m in inner.requests[-1].messages)
    assert SMALL in sent and "Runs a shell command." in sent
    assert "Quote paths" not in sent


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_request_that_cannot_fit_gets_anthropics_prompt_is_too_long_error(stream: bool) -> None:
    inner = Windowed(4096)
    with served(PromptedBackend(inner, constrained=False)) as url:
        reply = post(url, "anthropic", HUGE, stream)
    assert reply.status_code == 400
    error = reply.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    # What Claude Code matches to compact: both counts, the prompt's first.
    message = error["error"]["message"]
    assert message.startswith("prompt is too long: ")
    tokens, maximum = message.split(": ", 1)[1].split(" maximum")[0].split(" tokens > ")
    assert int(tokens) > int(maximum) == 4096 - 1024
    assert reply.headers["x-parlay-shrunk"] == "examples,descriptions,signatures"
    assert inner.requests == []  # nothing was cut and sent


@pytest.mark.parametrize("api", ["openai", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_openai_clients_get_context_length_exceeded_with_the_counts(api: str, stream: bool) -> None:
    with served(PromptedBackend(Windowed(4096), constrained=False)) as url:
        reply = post(url, api, HUGE, stream)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "tokens > 3072 maximum" in error["message"]


LLAMA_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (11486 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
    }
}


def llama_cpp_upstream(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    """A llama.cpp server that does not say its window, then overflows on every prompt."""

    def handle(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/chat/completions"):
            return httpx.Response(404, json={"error": {"message": "not found"}})
        seen.append(json.loads(request.content))
        return httpx.Response(400, json=LLAMA_OVERFLOW)

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("prompted", [False, True], ids=["native", "prompted"])
def test_a_model_servers_own_overflow_is_the_clients_overflow_error_not_upstream_refused(
    prompted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[dict[str, Any]] = []
    inner = OpenAIBackend(
        "m",
        base_url="http://model.invalid/v1",
        api_key="sk-upstream-0123456789",
        transport=llama_cpp_upstream(seen),
        capabilities=Capabilities(native_tools=not prompted, json_schema=False),
    )
    backend = PromptedBackend(inner) if prompted else inner
    with caplog.at_level(logging.DEBUG, logger="parlay"), served(backend) as url:
        anthropic = post(url, "anthropic", SMALL, stream=True)
        openai = post(url, "openai", SMALL, stream=False)
    assert anthropic.status_code == openai.status_code == 400
    message = anthropic.json()["error"]["message"]
    assert message.startswith("prompt is too long: 11486 tokens > 4096 maximum")
    assert "upstream" not in message
    assert openai.json()["error"]["code"] == "context_length_exceeded"
    # The operator's log has the model server's own words.
    assert any("exceeds the available context size" in r.getMessage() for r in caplog.records)


SCHEMA_REFUSAL = {"error": {"code": 400, "message": "failed to parse grammar", "type": "x"}}


def test_a_refused_grammar_is_not_asked_for_again(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/chat/completions"):
            return httpx.Response(404, json={})
        body = json.loads(request.content)
        seen.append(body)
        if "response_format" in body:
            return httpx.Response(400, json=SCHEMA_REFUSAL)
        reply = {"role": "assistant", "content": "No tool needed: hello."}
        choice = {"index": 0, "message": reply, "finish_reason": "stop"}
        return httpx.Response(
            200, json={"id": "x", "object": "chat.completion", "choices": [choice]}
        )

    inner = OpenAIBackend(
        "m",
        base_url="http://model.invalid/v1",
        transport=httpx.MockTransport(handle),
        capabilities=Capabilities(native_tools=False, json_schema=True),
        stream=False,
    )
    with caplog.at_level(logging.WARNING, logger="parlay"), served(PromptedBackend(inner)) as url:
        for _ in range(3):
            assert post(url, "openai", "say hello", stream=False).status_code == 200
    # One refused request, then never a grammar again: 4 requests for 3 turns, not 6.
    assert ["response_format" in body for body in seen] == [True, False, False, False]
    warnings = [r for r in caplog.records if "rejected the action schema" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.parametrize(
    "exc",
    [
        BackendTimeoutError("slow"),
        BackendConnectionError("down"),
        BackendStatusError("x", status_code=400),
        BackendStatusError("x", status_code=413),
        BackendStatusError("x", status_code=429),
        BackendStatusError("x", status_code=500),
    ],
)
def test_the_embedded_model_is_never_called_the_upstream(exc: Exception) -> None:
    assert "upstream" not in classify(exc).message
