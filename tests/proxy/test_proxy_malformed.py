"""Every kind of malformed request (tests/proxy/malformed.py) x both endpoints x both
modes (prompted engine, native passthrough): a 4xx in the client's own protocol, and no
upstream call. The outside probe found 26 of such requests answered with a 5xx, some
after the upstream was already called and paid for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from malformed import KINDS, Kind, shaped, tool
from proxy_harness import running
from proxy_stub import StubUpstream

from parlay import Capabilities, OpenAIBackend, PromptedBackend
from parlay.server import create_app

MODES = ("native", "prompted")


def app_for(stub: StubUpstream, mode: str) -> Any:
    """The proxy in `mode` in front of the stub, which counts its calls under the mode."""
    native = mode == "native"
    inner = OpenAIBackend(
        f"count-{mode}",
        base_url=stub.base_url,
        api_key="sk-upstream-secret",
        capabilities=Capabilities(native_tools=native, json_schema=True),
    )
    return create_app(inner if native else PromptedBackend(inner))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
async def test_malformed_request_gets_a_4xx_in_its_protocol_before_any_upstream_call(
    stub_upstream: StubUpstream, kind: Kind, api: str, mode: str
) -> None:
    method, path, raw = kind.build(api)
    before = stub_upstream.calls(f"count-{mode}")
    transport = httpx.ASGITransport(app_for(stub_upstream, mode))
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        r = await client.request(method, path, content=raw)
    assert r.status_code == kind.status, r.text[:300]
    assert r.headers["content-type"] == "application/json"
    assert shaped(api, r.json()), r.text[:300]
    assert stub_upstream.calls(f"count-{mode}") == before


def test_the_catalogue_holds_the_probes_kinds() -> None:
    names = {k.name for k in KINDS}
    for probe in (
        "temperature NaN",
        "temperature Infinity",
        "max_tokens of 5,000 digits",
        "lone surrogate in content",
        "lone surrogate in model",
        "100,000-deep nesting",
        "tool properties [1]",
        "tool required 5",
        "tool type [string, 1]",
        "10 MB body",
        "100,001 messages",
        "max_tokens -5",
        "max_tokens 10^15",
        "top_p 5",
        "duplicate tool names",
        "GET on the endpoint",
        "PUT on the endpoint",
        "unknown path",
    ):
        assert probe in names
    assert len(KINDS) >= 65


async def test_a_tool_schema_error_names_the_tool() -> None:
    stub_less = create_app(PromptedBackend(OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")))
    bad = {"type": "object", "properties": [1]}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(stub_less), base_url="http://proxy"
    ) as client:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [tool("openai"), tool("openai", name="lookup", schema=bad)],
        }
        r = await client.post("/v1/chat/completions", json=body)
        message = r.json()["error"]["message"]
        assert r.status_code == 400
        assert "'lookup'" in message and "tools[1]" in message and "properties" in message


def test_the_sdks_raise_bad_request_with_the_message(stub_upstream: StubUpstream) -> None:
    """What a client sees: the SDK's own 400 exception, with a message saying what to fix."""
    with running(app_for(stub_upstream, "prompted")) as server:
        oa = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="top_p"):
            oa.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], top_p=5
            )
        an = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="both named"):
            an.messages.create(
                model="m",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
                tools=[tool("anthropic"), tool("anthropic")],  # type: ignore[list-item]
            )


def test_an_oversized_body_gets_413_over_a_real_socket(stub_upstream: StubUpstream) -> None:
    """Through uvicorn the client must read the 413, not a reset connection, and the
    proxy must not buffer the whole body first (it answers from the Content-Length)."""
    with running(create_app(OpenAIBackend("m", base_url=stub_upstream.base_url))) as server:
        for path in ("/v1/chat/completions", "/v1/messages"):
            big = b'{"model": "m", "pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
            r = httpx.post(server.url + path, content=big, timeout=30)
            assert r.status_code == 413
            assert shaped("openai" if "chat" in path else "anthropic", r.json())

        # Sent chunked, without a length: refused once the limit is passed while reading.
        def chunks() -> Iterator[bytes]:
            yield b'{"model": "m", "pad": "'
            for _ in range(10 * 1024):
                yield b"x" * 1024
            yield b'"}'

        r = httpx.post(server.url + "/v1/messages", content=chunks(), timeout=30)
        assert r.status_code == 413 and shaped("anthropic", r.json())
        # The server still serves.
        assert httpx.get(server.url + "/health").json() == {"status": "ok"}


async def test_the_body_limit_is_configurable() -> None:
    from parlay import ScriptedBackend
    from parlay.wire.validate import Limits

    app = create_app(ScriptedBackend(["ok", "ok"]), limits=Limits(max_body_bytes=2048))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://p") as c:
        small = {"model": "m", "messages": [{"role": "user", "content": "x" * 1000}]}
        assert (await c.post("/v1/chat/completions", json=small)).status_code == 200
        big = {"model": "m", "messages": [{"role": "user", "content": "x" * 3000}]}
        r = await c.post("/v1/chat/completions", json=big)
        assert r.status_code == 413 and "2,048 bytes" in r.json()["error"]["message"]
