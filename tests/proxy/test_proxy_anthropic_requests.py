"""What Claude Code asks of an Anthropic endpoint beyond `/v1/messages`:
`POST /v1/messages/count_tokens` (counted by the model's tokenizer, the upstream, or an
estimate, and the header says which) and system turns inside `messages`."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest
from proxy_harness import running

from parlay import (
    AnthropicBackend,
    LocalBackend,
    OpenAIBackend,
    PromptedBackend,
    ScriptedBackend,
)
from parlay.backends.base import PLAIN_CHAT
from parlay.server import create_app

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "What is 2 + 3?"}], **extra}


def client_for(backend: Any, **kwargs: Any) -> httpx.AsyncClient:
    app = create_app(backend, **kwargs)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://proxy")


class Upstream:
    """An httpx transport that answers by path and remembers the paths asked."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.paths: list[str] = []
        self.bodies: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content or b"null"))
        answer = self.answers.get(request.url.path)
        if answer is None:
            return httpx.Response(404, json={"error": {"message": "not found"}})
        return httpx.Response(200, json=answer(self.bodies[-1]) if callable(answer) else answer)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


async def test_count_without_a_tokenizer_is_an_estimate_that_grows_with_tools() -> None:
    async with client_for(ScriptedBackend([])) as c:
        bare = await c.post("/v1/messages/count_tokens", json=body())
        tooled = await c.post("/v1/messages/count_tokens", json=body(tools=[ADD]))
    assert bare.status_code == 200 and bare.headers["x-parlay-token-count"] == "estimate"
    assert set(bare.json()) == {"input_tokens"}
    assert 0 < bare.json()["input_tokens"] < tooled.json()["input_tokens"]


async def test_count_uses_llama_cpp_template_and_tokenizer() -> None:
    upstream = Upstream(
        {
            "/apply-template": lambda b: {"prompt": "<|user|>" + b["messages"][0]["content"]},
            "/tokenize": lambda b: {"tokens": list(range(len(b["content"].split())))},
        }
    )
    backend = OpenAIBackend("m", base_url="http://llama/v1", transport=upstream.transport)
    async with client_for(backend) as c:
        r = await c.post("/v1/messages/count_tokens", json=body())
    assert r.headers["x-parlay-token-count"] == "tokenizer"
    assert r.json() == {"input_tokens": 5}  # "<|user|>What is 2 + 3?" split on spaces
    assert upstream.paths == ["/apply-template", "/tokenize"]


async def test_count_in_prompted_mode_counts_the_rendered_contract() -> None:
    upstream = Upstream(
        {
            "/apply-template": lambda b: {"prompt": json.dumps(b["messages"])},
            "/tokenize": lambda b: {"tokens": [0] * len(b["content"])},
        }
    )
    inner = OpenAIBackend(
        "m", base_url="http://llama/v1", capabilities=PLAIN_CHAT, transport=upstream.transport
    )
    async with client_for(PromptedBackend(inner)) as c:
        r = await c.post("/v1/messages/count_tokens", json=body(tools=[ADD]))
    sent = upstream.bodies[0]
    assert "tools" not in sent  # the tools are in the contract's system prompt
    assert "add" in sent["messages"][0]["content"] and sent["messages"][0]["role"] == "system"
    assert r.json()["input_tokens"] == len(json.dumps(sent["messages"]))


async def test_count_falls_back_to_the_estimate_once_the_server_has_no_tokenizer() -> None:
    upstream = Upstream({})
    backend = OpenAIBackend("m", base_url="http://openai/v1", transport=upstream.transport)
    async with client_for(backend) as c:
        first = await c.post("/v1/messages/count_tokens", json=body())
        second = await c.post("/v1/messages/count_tokens", json=body())
    assert (
        first.headers["x-parlay-token-count"]
        == "estimate"
        == second.headers["x-parlay-token-count"]
    )
    assert upstream.paths == ["/apply-template"]  # asked once, not on every count


async def test_count_asks_an_anthropic_upstream_its_own_count() -> None:
    upstream = Upstream({"/v1/messages/count_tokens": {"input_tokens": 123}})
    backend = AnthropicBackend("claude", base_url="http://anthropic", transport=upstream.transport)
    async with client_for(backend) as c:
        r = await c.post("/v1/messages/count_tokens", json=body(system="Be brief.", tools=[ADD]))
    assert r.json() == {"input_tokens": 123}
    assert r.headers["x-parlay-token-count"] == "upstream"
    sent = upstream.bodies[0]
    assert sent["system"] == "Be brief." and sent["tools"][0]["name"] == "add"
    assert "max_tokens" not in sent and "stream" not in sent


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "`model` is required"),
        ({"model": "m", "messages": []}, "non-empty array"),
        (body(tools=[{"name": "x"}]), "input_schema"),
    ],
)
async def test_malformed_count_request_is_a_400_in_anthropic_shape(sent: Any, says: str) -> None:
    async with client_for(ScriptedBackend([])) as c:
        r = await c.post("/v1/messages/count_tokens", json=sent)
    assert r.status_code == 400 and r.json()["type"] == "error"
    assert says in r.json()["error"]["message"]


async def test_count_needs_the_client_key() -> None:
    async with client_for(ScriptedBackend([]), client_keys=["k"]) as c:
        refused = await c.post("/v1/messages/count_tokens", json=body())
        allowed = await c.post("/v1/messages/count_tokens", json=body(), headers={"x-api-key": "k"})
    assert refused.status_code == 401 and refused.json()["type"] == "error"
    assert allowed.status_code == 200


def test_anthropic_sdk_reads_the_count() -> None:
    with running(create_app(ScriptedBackend([]))) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k")
        counted = client.messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "What is 2 + 3?"}], tools=[ADD]
        )
    assert counted.input_tokens > 0


@pytest.mark.model
async def test_count_on_the_embedded_model_uses_its_tokenizer() -> None:
    async with client_for(PromptedBackend(LocalBackend())) as c:
        bare = await c.post("/v1/messages/count_tokens", json=body())
        tooled = await c.post("/v1/messages/count_tokens", json=body(tools=[ADD]))
    assert bare.headers["x-parlay-token-count"] == "tokenizer"
    # "What is 2 + 3?" and the chat template's markers: a few tokens, not hundreds.
    assert 5 < bare.json()["input_tokens"] < 40
    # With a tool, the contract (its instructions and example turns) is what is counted.
    assert tooled.json()["input_tokens"] > 10 * bare.json()["input_tokens"]


async def test_claude_code_system_turn_reaches_the_engine_at_its_place() -> None:
    """The 400 Claude Code met ("messages[1].role is 'system'") is gone, and what the
    inner model sees keeps the system turn between the user turns it came between."""
    inner = ScriptedBackend(["Done."], capabilities=PLAIN_CHAT)
    sent = body(
        system=[{"type": "text", "text": "You are a CLI.", "cache_control": {"type": "ephemeral"}}],
        max_tokens=64000,
        tools=[ADD],
        messages=[
            {"role": "user", "content": "first"},
            {"role": "system", "content": "Agents you can launch: none."},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ],
    )
    async with client_for(PromptedBackend(inner, max_retries=0)) as c:
        r = await c.post("/v1/messages", json=sent)
    assert r.status_code == 200, r.text
    seen = [(type(m).__name__, m.content) for m in inner.requests[0].messages]
    first = next(i for i, (_, text) in enumerate(seen) if text == "first")
    assert seen[first + 1] == ("SystemMessage", "Agents you can launch: none.")
    assert seen[0][0] == "SystemMessage" and "You are a CLI." in seen[0][1]
