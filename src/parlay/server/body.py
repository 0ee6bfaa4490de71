"""Reading a request's body with both of its bounds: its size, and the time it may take
to arrive (a client sending a byte now and then cannot hold a connection open)."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from parlay.server.errors import ProxyError


async def read_body(request: Request, limit: int, timeout: float | None = None) -> bytes:
    """The body, refused with a 413 as soon as it is known to exceed `limit` bytes:
    from its Content-Length when it has one, else while it arrives (never buffered);
    with a 408 when all of it has not arrived within `timeout` seconds (a total, so a
    client sending a byte now and then cannot stretch it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 15 or int(declared) > limit):
        raise ProxyError(413, f"the request body is over {limit:,} bytes, the limit here")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise ProxyError(
                        413, f"the request body is over {limit:,} bytes, the limit here"
                    )
                chunks.append(chunk)
    except TimeoutError:
        raise ProxyError(
            408,
            f"the request body did not arrive within {timeout:g} s ({size:,} bytes came); "
            "send it again, all at once",
            close=True,
        ) from None
    except ClientDisconnect:
        raise ProxyError(499, "the client hung up while sending the request body") from None
    return b"".join(chunks)
