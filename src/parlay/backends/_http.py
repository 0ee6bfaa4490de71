"""httpx plumbing shared by the HTTP backends: one client per event loop, errors mapped."""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendStatusError,
    BackendTimeoutError,
)
from parlay.wire.sse import ServerSentEvent, read_events

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=30.0)


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


class HttpTransport:
    """POSTs JSON to one base URL; keeps one `httpx.AsyncClient` per running event loop.

    httpx clients hold connections bound to the loop that made them, and parlay runs on
    the caller's loop in async code and on its portal loop in sync code.
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
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._transport = transport
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
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
                transport=self._transport,
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            )
            self._clients[loop] = found
        return found

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        found = self._clients.pop(loop, None)
        if found is not None:
            await found.aclose()

    def _describe(self, path: str) -> str:
        return f"{self.base_url}{path}"

    async def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        async with self._request(path, body) as response:
            await response.aread()
            try:
                return response.json()
            except json.JSONDecodeError as exc:
                raise BackendProtocolError(
                    f"{self._describe(path)} answered with a body that is not JSON: "
                    f"{response.text[:200]!r}"
                ) from exc

    async def post_sse(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[ServerSentEvent]:
        async with self._request(path, body) as response:
            try:
                async for event in read_events(response.aiter_lines()):
                    yield event
            except httpx.TimeoutException as exc:
                raise BackendTimeoutError(
                    f"{self._describe(path)} stopped sending in the middle of a stream "
                    f"({type(exc).__name__})"
                ) from exc
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                raise BackendProtocolError(
                    f"the stream from {self._describe(path)} was cut: {exc}"
                ) from exc

    @asynccontextmanager
    async def _request(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[httpx.Response]:
        client = self.client()
        try:
            request = client.build_request("POST", path, json=body)
            try:
                response = await client.send(request, stream=True)
            except httpx.RemoteProtocolError:
                # A kept-alive connection the server had closed before answering
                # (llama.cpp's server does this between requests): nothing was
                # answered, so send once more, on a fresh connection.
                request = client.build_request("POST", path, json=body)
                response = await client.send(request, stream=True)
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
        try:
            if response.status_code >= 400:
                await response.aread()
                try:
                    payload: Any = response.json()
                except json.JSONDecodeError:
                    payload = response.text
                raise BackendStatusError(
                    f"{self._describe(path)} answered HTTP {response.status_code}: "
                    f"{_error_message(payload)}",
                    status_code=response.status_code,
                    body=payload,
                )
            yield response
        finally:
            await response.aclose()
