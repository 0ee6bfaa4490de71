"""Upstream errors as clients meet them (the official SDKs where that is the point): the
status kept meaningful, a 429's Retry-After passed on, the upstream's body, URL and keys
never shown, exactly one upstream call per request in both modes, and /health quiet."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx
import openai
import pytest
from malformed import shaped, tool
from proxy_harness import running
from proxy_stub import StubUpstream

from parlay import Capabilities, OpenAIBackend, PromptedBackend
from parlay.server import create_app

KEY = "sk-upstream-0123456789abcdef"
OA = {"model": "m", "messages": [{"role": "user", "content": "weather in Paris?"}]}
AN = {**OA, "max_tokens": 50}


def backend(stub: StubUpstream, mode: str, prompted: bool) -> Any:
    inner = OpenAIBackend(
        mode,
        base_url=stub.base_url,
        api_key=KEY,
        timeout=5,
        capabilities=Capabilities(native_tools=not prompted, json_schema=True),
    )
    return PromptedBackend(inner) if prompted else inner


@contextmanager
def proxy(stub: StubUpstream, mode: str, prompted: bool, **kwargs: Any) -> Iterator[str]:
    with running(create_app(backend(stub, mode, prompted), **kwargs)) as server:
        yield server.url


def post(url: str, api: str, stream: bool, tools: bool = True) -> httpx.Response:
    body: dict[str, Any] = dict(OA if api == "openai" else AN)
    if tools:
        body["tools"] = [tool(api)]
    path = "/v1/chat/completions" if api == "openai" else "/v1/messages"
    return httpx.post(url + path, json={**body, "stream": stream}, timeout=20)


@pytest.mark.parametrize("prompted", [False, True], ids=["native", "prompted"])
@pytest.mark.parametrize(
    ("mode", "status"), [("fail-500", 502), ("fail-429", 429), ("fail-401", 502)]
)
def test_an_upstream_error_costs_exactly_one_upstream_call(
    stub_upstream: StubUpstream, mode: str, status: int, prompted: bool
) -> None:
    """In prompted mode a 500, 429 or 401 was taken for a rejected grammar and the request
    sent again unconstrained: two calls, the rate limit ignored."""
    with proxy(stub_upstream, mode, prompted) as url:
        for api in ("openai", "anthropic"):
            for stream in (False, True):
                before = stub_upstream.calls(mode)
                r = post(url, api, stream)
                assert r.status_code == status, r.text
                assert shaped(api, r.json())
                assert stub_upstream.calls(mode) - before == 1, (api, stream)


def test_a_rejected_grammar_is_the_one_error_sent_again(stub_upstream: StubUpstream) -> None:
    """The upstream's 400 about the schema: the engine goes on unconstrained (2 calls)."""
    with proxy(stub_upstream, "schema-400", prompted=True) as url:
        before = stub_upstream.calls("schema-400")
        r = post(url, "openai", stream=False, tools=True)
        assert r.status_code == 200, r.text
        assert stub_upstream.calls("schema-400") - before == 2


@pytest.mark.parametrize("prompted", [False, True], ids=["native", "prompted"])
def test_a_429_stays_429_with_its_retry_after(stub_upstream: StubUpstream, prompted: bool) -> None:
    with proxy(stub_upstream, "fail-429", prompted) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.RateLimitError) as caught:
            oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.response.headers["retry-after"] == "7"
        assert "retry after 7" in caught.value.message
        an = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as info:  # noqa: SIM117
            with an.messages.stream(**AN) as stream:  # type: ignore[arg-type]
                stream.get_final_message()
        assert info.value.response.headers["retry-after"] == "7"


def test_an_upstream_401_is_a_502_about_the_proxys_own_credentials(
    stub_upstream: StubUpstream,
) -> None:
    with proxy(stub_upstream, "fail-401", prompted=False) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 502
        assert "upstream credentials" in caught.value.message
        assert KEY not in caught.value.response.text


@pytest.mark.parametrize("mode", ["echo-key", "fail-401", "fail-500", "not-json"])
def test_the_upstreams_body_url_and_key_never_reach_the_client_or_the_log(
    stub_upstream: StubUpstream, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="parlay")
    with proxy(stub_upstream, mode, prompted=False) as url:
        for api in ("openai", "anthropic"):
            for stream in (False, True):
                r = post(url, api, stream, tools=False)
                assert r.status_code == 502 and shaped(api, r.json())
                for leak in (KEY, stub_upstream.base_url, str(stub_upstream.port), "stub"):
                    assert leak not in r.text, (leak, r.text)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert KEY not in logged and KEY[:12] not in logged
    # The operator still gets the upstream's URL and own words, at debug level only.
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(stub_upstream.base_url in line for line in debug)
    others = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert not any(stub_upstream.base_url in line for line in others)


def test_health_says_ok_and_nothing_else_without_a_valid_key(stub_upstream: StubUpstream) -> None:
    with proxy(stub_upstream, "m", prompted=False, client_keys=["sk-client"]) as url:
        assert httpx.get(url + "/health").json() == {"status": "ok"}
        bad = {"Authorization": "Bearer sk-wrong"}
        assert httpx.get(url + "/health", headers=bad).json() == {"status": "ok"}
        good = httpx.get(url + "/health", headers={"x-api-key": "sk-client"}).json()
        assert good["status"] == "ok" and stub_upstream.base_url in good["backend"]
    with proxy(stub_upstream, "m", prompted=False) as url:  # open: nobody's key is valid
        assert httpx.get(url + "/health").json() == {"status": "ok"}


@pytest.mark.parametrize("prompted", [False, True], ids=["native", "prompted"])
def test_a_lone_surrogate_in_the_upstreams_content_is_replaced(
    stub_upstream: StubUpstream, prompted: bool
) -> None:
    """It crashed the encoder: a plain-text 500."""
    with proxy(stub_upstream, "surrogate", prompted) as url:
        oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        reply = oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert "\ufffd" in (reply.choices[0].message.content or "")
        chunks = oa.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert "\ufffd" in text
        an = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        message = an.messages.create(**AN)  # type: ignore[arg-type]
        assert "\ufffd" in message.content[0].text  # type: ignore[union-attr]
        with an.messages.stream(**AN) as stream:  # type: ignore[arg-type]
            assert "\ufffd" in stream.get_final_text()


def test_garbage_in_the_upstreams_stream_ends_in_a_protocol_error(
    stub_upstream: StubUpstream,
) -> None:
    with proxy(stub_upstream, "garbage-sse", prompted=False) as url:
        for api in ("openai", "anthropic"):
            r = post(url, api, stream=True, tools=False)
            if r.status_code == 200:  # the role chunk went out before the garbage
                last = r.text.strip().split("\n\n")[-1]
                assert "error" in last and "[DONE]" not in r.text
            else:
                assert r.status_code == 502 and shaped(api, r.json())
