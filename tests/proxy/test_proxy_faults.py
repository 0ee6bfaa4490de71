"""Injected upstream faults through the proxy on uvicorn: each ends in the client's own
error shape with the right status, or in an error event mid-stream; never in a hang."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import openai
import pytest
from proxy_harness import running
from proxy_stub import StubUpstream, free_port

from parlay import Capabilities, OpenAIBackend
from parlay.errors import BackendTimeoutError
from parlay.events import Finish, TextDelta
from parlay.server import create_app

OA = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
AN = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
# The stub's calling modes call get_weather: a client must offer it to receive the call.
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
OA_CALLING = {
    **OA,
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}],
}
AN_CALLING = {**AN, "tools": [{"name": "get_weather", "input_schema": WEATHER}]}


@contextmanager
def proxy_to(base_url: str, mode: str, timeout: float = 1.0) -> Iterator[str]:
    backend = OpenAIBackend(mode, base_url=base_url, api_key="", timeout=timeout)
    with running(create_app(backend)) as server:
        yield server.url


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    out = []
    for frame in text.strip().split("\n\n"):
        name = None
        data = None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((name, data if data == "[DONE]" else json.loads(data or "null")))
    return out


@pytest.mark.parametrize(
    ("mode", "status"),
    [("fail-500", 502), ("slow", 504)],
)
@pytest.mark.parametrize("stream", [False, True])
def test_upstream_failures_get_gateway_statuses(
    stub_upstream: StubUpstream, mode: str, status: int, stream: bool
) -> None:
    with proxy_to(stub_upstream.base_url, mode, timeout=0.5) as url:
        started = time.monotonic()
        r = httpx.post(url + "/v1/chat/completions", json={**OA, "stream": stream}, timeout=10)
        assert r.status_code == status
        assert r.json()["error"]["message"]
        r = httpx.post(url + "/v1/messages", json={**AN, "stream": stream}, timeout=10)
        assert r.status_code == status
        assert r.json()["type"] == "error"
        assert r.json()["error"]["type"] == ("timeout_error" if status == 504 else "api_error")
        assert time.monotonic() - started < 5


def test_refused_connection_is_502() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with proxy_to(dead, "m") as url:
        r = httpx.post(url + "/v1/chat/completions", json=OA, timeout=10)
        assert r.status_code == 502 and "cannot be reached" in r.json()["error"]["message"]
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as info:
            client.messages.create(**AN)
        assert info.value.status_code == 502


@pytest.mark.parametrize("mode", ["cut", "cut-call"])
def test_cut_stream_ends_with_an_error_event(stub_upstream: StubUpstream, mode: str) -> None:
    oa, an = (OA_CALLING, AN_CALLING) if mode == "cut-call" else (OA, AN)
    with proxy_to(stub_upstream.base_url, mode) as url:
        r = httpx.post(url + "/v1/chat/completions", json={**oa, "stream": True}, timeout=10)
        assert r.status_code == 200  # headers went out with the first event
        events = sse_events(r.text)
        assert "error" in events[-1][1] and events[-1][1]["error"]["type"] == "upstream_error"
        assert all(d != "[DONE]" for _, d in events)
        r = httpx.post(url + "/v1/messages", json={**an, "stream": True}, timeout=10)
        events = sse_events(r.text)
        assert events[0][0] == "message_start"
        assert events[-1][0] == "error" and events[-1][1]["error"]["type"] == "api_error"
        assert not any(name == "message_stop" for name, _ in events)
        # Not streamed to the client: a plain 502.
        r = httpx.post(url + "/v1/chat/completions", json=oa, timeout=10)
        assert r.status_code == 502


def test_cut_stream_raises_in_the_sdks(stub_upstream: StubUpstream) -> None:
    with proxy_to(stub_upstream.base_url, "cut-call") as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=10)
        with pytest.raises(openai.APIError, match="cut"):  # noqa: SIM117
            with oa.chat.completions.stream(
                model="m", messages=[{"role": "user", "content": "x"}]
            ) as stream:
                for _ in stream:
                    pass
        an = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=10)
        with pytest.raises(anthropic.APIError):  # noqa: SIM117
            with an.messages.stream(**AN) as astream:
                astream.get_final_message()


def test_stalled_stream_times_out_with_an_error_event(stub_upstream: StubUpstream) -> None:
    with proxy_to(stub_upstream.base_url, "stall", timeout=0.5) as url:
        started = time.monotonic()
        r = httpx.post(url + "/v1/chat/completions", json={**OA, "stream": True}, timeout=10)
        events = sse_events(r.text)
        assert events[-1][1]["error"]["type"] == "timeout_error"
        assert time.monotonic() - started < 5


def test_text_reaches_the_client_as_the_upstream_produces_it(stub_upstream: StubUpstream) -> None:
    """The stub sends a chunk every 0.3 s: each must arrive about then, not all at the end."""
    with proxy_to(stub_upstream.base_url, "drip", timeout=5) as url:
        arrivals: list[float] = []
        started = time.monotonic()
        with httpx.stream(
            "POST", url + "/v1/chat/completions", json={**OA, "stream": True}, timeout=10
        ) as r:
            for line in r.iter_lines():
                if (
                    line.startswith("data: ")
                    and '"content":"' in line
                    and '"content":""' not in line
                ):
                    arrivals.append(time.monotonic() - started)
    assert len(arrivals) == 4
    # The words left the stub 0.3 s apart; buffered, they would arrive together.
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert all(gap > 0.15 for gap in gaps), gaps


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_stream_cut_inside_an_action_block_through_the_engine(
    stub_upstream: StubUpstream, choice: str
) -> None:
    """A plain-chat upstream dies halfway through writing an action block. Depending on
    whether the engine had released anything yet, the client gets a 502 error body or a
    stream that ends in an error event; either way in its own protocol, and promptly."""
    from parlay.engine.backend import PromptedBackend

    inner = OpenAIBackend(
        "cut",
        base_url=stub_upstream.base_url,
        api_key="",
        timeout=2,
        capabilities=Capabilities(native_tools=False),
    )
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    ]
    an_tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    an_choice = {"type": "auto" if choice == "auto" else "any"}
    with running(create_app(PromptedBackend(inner))) as server:
        started = time.monotonic()
        r = httpx.post(
            server.url + "/v1/chat/completions",
            json={**OA, "stream": True, "tools": tools, "tool_choice": choice},
            timeout=10,
        )
        if r.status_code == 200:
            last = sse_events(r.text)[-1][1]
            assert last["error"]["type"] == "upstream_error" and "cut" in last["error"]["message"]
        else:
            assert r.status_code == 502 and "cut" in r.json()["error"]["message"]
        r = httpx.post(
            server.url + "/v1/messages",
            json={**AN, "stream": True, "tools": an_tools, "tool_choice": an_choice},
            timeout=10,
        )
        if r.status_code == 200:
            name, data = sse_events(r.text)[-1]
            assert name == "error" and data["error"]["type"] == "api_error"
        else:
            assert r.status_code == 502 and r.json()["type"] == "error"
        assert time.monotonic() - started < 8


def test_argument_fragments_reach_the_client_as_the_upstream_produces_them(
    stub_upstream: StubUpstream,
) -> None:
    """A native upstream's tool-call fragments come 0.3 s apart: so must ours (both protocols)."""
    with proxy_to(stub_upstream.base_url, "drip-call", timeout=5) as url:
        for path, marker in (
            ("/v1/chat/completions", b'"arguments":"'),
            ("/v1/messages", b"input_json_delta"),
        ):
            body = {**(OA_CALLING if "chat" in path else AN_CALLING), "stream": True}
            arrivals: list[float] = []
            started = time.monotonic()
            with httpx.stream("POST", url + path, json=body, timeout=10) as r:
                for line in r.iter_lines():
                    if marker in line.encode() and b'"arguments":""' not in line.encode():
                        arrivals.append(time.monotonic() - started)
            assert len(arrivals) == 2, path
            assert arrivals[1] - arrivals[0] > 0.2, path


class _Endless:
    """A backend that sends one word, then waits forever; records when it is closed."""

    name = "endless"
    capabilities = Capabilities(native_tools=True)

    def __init__(self) -> None:
        self.closed = threading.Event()

    async def stream(self, request: Any) -> Any:
        try:
            yield TextDelta("Hello")
            await asyncio.sleep(3600)
        finally:
            self.closed.set()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_client_disconnect_closes_the_backend_stream(path: str) -> None:
    backend = _Endless()
    with running(create_app(backend)) as server:
        body = {**(OA if "chat" in path else AN), "stream": True}
        with httpx.stream("POST", server.url + path, json=body, timeout=10) as r:
            first = next(r.iter_raw())
            assert b"Hello" in first
        # Leaving the block closed the connection mid-stream.
        assert backend.closed.wait(5)


def test_client_giving_up_on_a_whole_reply_closes_the_backend_stream() -> None:
    backend = _Endless()
    with running(create_app(backend)) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(server.url + "/v1/chat/completions", json=OA, timeout=0.5)
        assert backend.closed.wait(5)
        # The server is fine afterwards.
        assert httpx.get(server.url + "/health").status_code == 200


class _Slow:
    """Quiet for `delay` seconds, then either answers or fails."""

    name = "slow"
    capabilities = Capabilities(native_tools=True)

    def __init__(self, delay: float, fail: bool = False) -> None:
        self.delay = delay
        self.fail = fail

    async def stream(self, request: Any) -> Any:
        await asyncio.sleep(self.delay)
        if self.fail:
            raise BackendTimeoutError("the upstream gave up")
        yield TextDelta("late")
        yield Finish("stop")


@pytest.mark.parametrize(
    ("path", "beat"), [("/v1/chat/completions", b": keep-alive"), ("/v1/messages", b"event: ping")]
)
def test_a_quiet_backend_gets_the_stream_started_and_kept_alive(path: str, beat: bytes) -> None:
    body = {**(OA if "chat" in path else AN), "stream": True}
    with running(create_app(_Slow(0.6), first_event_wait=0.1, heartbeat=0.1)) as server:
        with httpx.stream("POST", server.url + path, json=body, timeout=10) as r:
            pieces = list(r.iter_raw())
        first, text = pieces[0], b"".join(pieces)
        assert r.status_code == 200
        assert b"late" not in first  # the head went out before the backend spoke
        assert text.count(beat) >= 3
        assert b"late" in text
        if "chat" in path:
            assert text.rstrip().endswith(b"data: [DONE]")
            # The SDK ignores the keep-alives.
            oa = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
            chunks = list(
                oa.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "x"}], stream=True
                )
            )
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "late"
        else:
            an = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
            with an.messages.stream(**AN) as stream:
                assert stream.get_final_message().content[0].text == "late"  # type: ignore[union-attr]


def test_a_backend_failing_after_the_stream_started_ends_it_with_an_error() -> None:
    with running(create_app(_Slow(0.3, fail=True), first_event_wait=0.05, heartbeat=0.1)) as server:
        r = httpx.post(server.url + "/v1/messages", json={**AN, "stream": True}, timeout=10)
        assert r.status_code == 200
        name, data = sse_events(r.text)[-1]
        assert name == "error" and data["error"]["type"] == "timeout_error"
        # Before the wait runs out, the same failure keeps its HTTP status.
    with running(create_app(_Slow(0.05, fail=True), first_event_wait=2)) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json={**OA, "stream": True}, timeout=10)
        assert r.status_code == 504
