"""`parlay serve --workers 2`: the proxy keeps no state between requests, so the two
turns of one tool conversation (the call, then the tool result -> the answer) come out
right when different worker processes answer them, through the official SDKs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx
import openai
import pytest
from proxy_stub import ANSWER, RESULT, StubUpstream
from serve_process import ServeProcess, parlay_serve

from parlay.server.wires import WORKER_HEADER

TOOLS_OA: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
TOOLS_AN: Any = [{"name": "get_weather", "input_schema": TOOLS_OA[0]["function"]["parameters"]}]
ASK = "What's the weather in Paris?"


def fresh_connections() -> httpx.Client:
    # One connection per request, so the kernel may hand each to either worker.
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30)


def answered_elsewhere(ask: Callable[[], tuple[str, Any]], first: str) -> tuple[str, Any]:
    """`ask()` until a worker other than `first` answers it (each answer checked by the
    caller). The kernel spreads new connections, but not in any set order: asked one at a
    time, an idle machine let the same worker take 60 in a row. So each round asks 8 at
    once, and a worker busy with one leaves the next to the other."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(20):
            replies = list(pool.map(lambda _: ask(), range(8)))
            for worker, reply in replies:
                if worker != first:
                    return worker, reply
    raise AssertionError(f"every request went to worker {first}")


def openai_conversation(server: ServeProcess) -> None:
    client = openai.OpenAI(
        base_url=server.url + "/v1", api_key="x", max_retries=0, http_client=fresh_connections()
    )
    messages: list[Any] = [{"role": "user", "content": ASK}]
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=messages, tools=TOOLS_OA
    )
    first = raw.headers[WORKER_HEADER]
    message = raw.parse().choices[0].message
    call = message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    messages += [message, {"role": "tool", "tool_call_id": call.id, "content": RESULT}]

    def second_turn() -> tuple[str, Any]:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=messages, tools=TOOLS_OA
        )
        reply = raw.parse().choices[0].message
        assert reply.content == ANSWER and not reply.tool_calls
        return raw.headers[WORKER_HEADER], reply

    second, _ = answered_elsewhere(second_turn, first)
    assert second != first


def anthropic_conversation(server: ServeProcess) -> None:
    import httpx2  # the Anthropic SDK's own HTTP client

    fresh = anthropic.DefaultHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0, http_client=fresh)
    messages: list[Any] = [{"role": "user", "content": ASK}]
    raw = client.messages.with_raw_response.create(
        model="m", max_tokens=100, messages=messages, tools=TOOLS_AN
    )
    first = raw.headers[WORKER_HEADER]
    reply = raw.parse()
    use = next(b for b in reply.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": reply.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": RESULT}],
        },
    ]

    def second_turn() -> tuple[str, Any]:
        raw = client.messages.with_raw_response.create(
            model="m", max_tokens=100, messages=messages, tools=TOOLS_AN
        )
        final = raw.parse()
        assert [b.type for b in final.content] == ["text"]
        assert final.content[0].text == ANSWER  # type: ignore[union-attr]
        return raw.headers[WORKER_HEADER], final

    answered_elsewhere(second_turn, first)


@pytest.mark.parametrize("tools", ["native", "prompted"])
def test_two_turns_of_one_tool_conversation_answered_by_different_workers(
    stub_upstream: StubUpstream, tools: str
) -> None:
    args = ["--upstream-url", stub_upstream.base_url, "--upstream-model", "turns"]
    with parlay_serve(*args, "--tools", tools, "--workers", "2", "--log-level", "warning") as s:
        openai_conversation(s)
        anthropic_conversation(s)
        # Two processes answer, neither of them the supervisor.
        seen = {
            httpx.get(s.url + "/health", headers={"Connection": "close"}).headers[WORKER_HEADER]
            for _ in range(40)
        }
        assert str(s.proc.pid) not in seen


def test_workers_listen_on_a_socket_that_says_it_is_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn's own `--workers` socket has protocol 0, so asyncio leaves Nagle on for
    every connection: ~40 ms per keep-alive request (measured 44 ms p50 against 2 ms)."""
    import socket

    import uvicorn
    import uvicorn.supervisors

    from parlay.server.run import _serve_workers

    seen: list[socket.socket] = []

    class Capture:
        def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
            seen.extend(sockets)

        def run(self) -> None:
            pass

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", Capture)
    _serve_workers(uvicorn.Config("parlay.server.run:worker_app", port=0, workers=2))
    assert seen[0].proto == socket.IPPROTO_TCP
    # What asyncio checks before it sets TCP_NODELAY on each accepted connection.
    seen[0].listen()
    client = socket.create_connection(seen[0].getsockname())
    accepted, _ = seen[0].accept()
    assert accepted.proto == socket.IPPROTO_TCP
    for s in (client, accepted, seen[0]):
        s.close()
