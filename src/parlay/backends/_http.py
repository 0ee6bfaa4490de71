"""httpx plumbing shared by the HTTP backends: one client per event loop, errors mapped."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx

from parlay.backends._http1 import Answer, Http1Client
from parlay.backends._net import pooled_transport
from parlay.backends.window import overflow_error
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendRateLimitError,
    BackendSchemaRejectedError,
    BackendStatusError,
    BackendStreamCutError,
    BackendTimeoutError,
    ParlayError,
)
from parlay.wire.sse import ServerSentEvent, bounded_lines, read_events

CONNECT_SECONDS = 10.0
DEFAULT_TIMEOUT = httpx.Timeout(connect=CONNECT_SECONDS, read=300.0, write=30.0, pool=30.0)
# Connections to one upstream: as many kept alive as may be open, so a burst of
# concurrent requests reuses its connections instead of closing all but a few and
# opening them again on the next burst; idle ones close after 5 s.
POOL = httpx.Limits(max_connections=256, max_keepalive_connections=256, keepalive_expiry=5.0)


# Things that look like credentials in text an upstream sends back (some echo the key
# they were given): OpenAI-style keys, bearer tokens, `api_key=...` pairs.
_SECRET_SHAPES = re.compile(
    r"(?i)(\b(?:sk|pk|rk|ak)-|bearer\s+|(?:key|token|secret)[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z0-9._~+/=\-]{6,}"
)
# Words by which an upstream says it cannot use the request's JSON schema or grammar
# (llama.cpp, vLLM, OpenAI, ...): only such a refusal lets a constrained request retry.
_SCHEMA_WORDS = re.compile(r"(?i)schema|grammar|response_format|guided|xgrammar|outlines|gbnf")
_RETRY_AFTER = re.compile(r"[0-9]{1,9}|[A-Za-z]{3}, [0-9]{2} [A-Za-z]{3} [0-9]{4} [0-9:]{8} GMT")


def mask_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with the given secrets and anything shaped like a key replaced by `***`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _SECRET_SHAPES.sub(lambda m: m.group(1) + "***", text)


def schema_rejected(exc: BackendStatusError) -> bool:
    """Whether `exc` is a refusal of the request's JSON schema or grammar (a 400 or 422
    saying so), the one upstream error after which a constrained request may be sent
    again unconstrained: never a 5xx, a 429 or a 401."""
    if isinstance(exc, BackendSchemaRejectedError):
        return True
    if exc.status_code not in (400, 422):
        return False
    return bool(_SCHEMA_WORDS.search(f"{exc} {_error_message(exc.body)}"))


def _error_message(body: Any) -> str:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
    return str(body)[:500]


def _for_httpx(base_url: str) -> bool:
    """Whether `base_url` carries credentials (httpx sends them as basic auth) or the
    environment names a proxy for it (httpx speaks to proxies): parlay's client does
    neither."""
    url = httpx.URL(base_url)
    if url.userinfo:
        return True
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(url.scheme) or proxies.get("all")):
        return False
    # In urllib.request since Python 2, not in its stubs: NO_PROXY's rules as httpx reads them.
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return not bypass(url.host, proxies)


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    # httpx's encoding of `json=`: what upstreams (and the tests' snapshots) saw before.
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


class HttpTransport:
    """POSTs JSON to one base URL; keeps one client per running event loop.

    The client is parlay's own (`_http1`), or httpx's when a proxy from the environment
    applies, the URL carries credentials, or an httpx transport is passed in (the tests'
    `MockTransport`, a user's own). Clients hold connections bound to the loop that made
    them, and parlay runs on the caller's loop in async code and on its portal loop in
    sync code.
    """

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        # The credentials this transport sends, masked in every error it raises.
        self.secrets = tuple(
            value.partition(" ")[2] if name.lower() == "authorization" else value
            for name, value in headers.items()
            if name.lower() in ("authorization", "x-api-key", "api-key")
        )
        if not isinstance(timeout, httpx.Timeout):
            # One number is the wait for the model (`parlay serve --timeout`); a host
            # that has not accepted a connection in 10 s will not, however long the model.
            connect = None if timeout is None else min(timeout, CONNECT_SECONDS)
            timeout = httpx.Timeout(timeout, connect=connect)
        self.timeout = timeout
        self._transport = transport
        self.uses_httpx = transport is not None or _for_httpx(self.base_url)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._http1: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Http1Client] = (
            weakref.WeakKeyDictionary()
        )

    def client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        found = self._clients.get(loop)
        if found is None or found.is_closed:
            found = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self.headers,
                timeout=self.timeout,
                transport=self._transport or pooled_transport(POOL),
            )
            self._clients[loop] = found
        return found

    def http1(self) -> Http1Client:
        loop = asyncio.get_running_loop()
        found = self._http1.get(loop)
        if found is None or found.closed:
            found = self._http1[loop] = Http1Client(self.base_url, self.headers, self.timeout)
        return found

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        lean = self._http1.pop(loop, None)
        if lean is not None:
            await lean.aclose()
        found = self._clients.pop(loop, None)
        if found is not None:
            await found.aclose()

    def _describe(self, path: str) -> str:
        return f"{self.base_url}{path}"

    async def get_json(self, path: str) -> Any:
        return await self._json(path, None)

    async def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self._json(path, body)

    async def _json(self, path: str, body: Mapping[str, Any] | None) -> Any:
        """The JSON answer to a POST of `body`, or to a GET when there is none."""
        async with self._request(path, body) as response:
            with self._reading(path):
                raw = await _bounded_body(response, f"{self._describe(path)} answered with")
            try:
                return json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                text = raw[:200].decode("utf-8", "replace")
                excerpt = mask_secrets(text, self.secrets)
                raise BackendProtocolError(
                    f"{self._describe(path)} answered with a body that is not JSON: {excerpt!r}"
                ) from None

    async def post_sse(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[ServerSentEvent]:
        async with self._request(path, body) as response:
            with self._reading(path):
                async for event in read_events(bounded_lines(response.aiter_text())):
                    yield event

    @contextmanager
    def _reading(self, path: str) -> Iterator[None]:
        """httpx's errors while an answer's body is read, as parlay's (parlay's own client
        raises these itself)."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise BackendTimeoutError(
                f"{self._describe(path)} stopped sending in the middle of an answer "
                f"({type(exc).__name__})"
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise BackendStreamCutError(
                f"the answer from {self._describe(path)} was cut: {exc}"
            ) from exc

    @asynccontextmanager
    async def _request(
        self, path: str, body: Mapping[str, Any] | None
    ) -> AsyncIterator[httpx.Response | Answer]:
        method = "GET" if body is None else "POST"
        response: httpx.Response | Answer
        if self.uses_httpx:
            response = await self._send_httpx(method, path, body)
        else:
            payload = None if body is None else _json_bytes(body)
            response = await self.http1().request(method, path, payload)
        try:
            if response.status_code >= 400:
                sample = await _error_sample(response)
                raise self._status_error(path, response, sample)
            yield response
        finally:
            await response.aclose()

    async def _send_httpx(
        self, method: str, path: str, body: Mapping[str, Any] | None
    ) -> httpx.Response:
        client = self.client()
        try:
            request = client.build_request(method, path, json=body)
            try:
                return await client.send(request, stream=True)
            except httpx.RemoteProtocolError:
                # A kept-alive connection the server had closed before answering
                # (llama.cpp's server does this between requests): nothing was
                # answered, so send once more, on a fresh connection.
                request = client.build_request(method, path, json=body)
                return await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise BackendTimeoutError(
                f"{self._describe(path)} did not answer in time ({type(exc).__name__})"
            ) from exc
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.NetworkError) as exc:
            raise BackendConnectionError(
                f"cannot reach {self._describe(path)}: {exc or type(exc).__name__}"
            ) from exc
        except httpx.HTTPError as exc:
            raise BackendError(f"request to {self._describe(path)} failed: {exc}") from exc

    def _status_error(
        self, path: str, response: httpx.Response | Answer, sample: bytes
    ) -> ParlayError:
        """The error for an HTTP error status (from the first `sample` bytes of its body),
        credentials masked in message and body; a prompt over the model's window is
        `ContextWindowExceeded`."""
        text = mask_secrets(sample.decode("utf-8", "replace"), self.secrets)
        payload: Any
        try:
            payload = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            payload = text
        status = response.status_code
        if (overflow := overflow_error(status, text)) is not None:
            return overflow
        message = f"{self._describe(path)} answered HTTP {status}: {_error_message(payload)}"
        if status == 429:
            after = response.headers.get("retry-after", "").strip()
            # Passed on to clients as it is, so only a well-formed value.
            retry_after = after if _RETRY_AFTER.fullmatch(after) else None
            return BackendRateLimitError(message, body=payload, retry_after=retry_after)
        if status in (400, 422) and _SCHEMA_WORDS.search(_error_message(payload)):
            return BackendSchemaRejectedError(message, status_code=status, body=payload)
        return BackendStatusError(message, status_code=status, body=payload)


# The largest whole (not streamed) answer read from a model server: a reply, a model list.
MAX_BODY_BYTES = 64 * 1024 * 1024


async def _bounded_body(response: httpx.Response | Answer, who: str) -> bytes:
    """The body, read while it stays under `MAX_BODY_BYTES` (a server sending without
    end fails the request instead of filling the proxy's memory)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BackendProtocolError(f"{who} a body over {MAX_BODY_BYTES:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# What an error's body is read for (its message): the start is enough, and a server that
# sends an endless error page is not read to its end.
ERROR_SAMPLE_BYTES = 64 * 1024


async def _error_sample(response: httpx.Response | Answer) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_SAMPLE_BYTES:
            break
    return b"".join(chunks)[:ERROR_SAMPLE_BYTES]
