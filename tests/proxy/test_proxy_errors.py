"""Which status each failure becomes, in one table (parlay's BackendError subclasses)."""

from __future__ import annotations

import pytest

from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendStatusError,
    BackendTimeoutError,
    InvalidRequestError,
)
from parlay.server.errors import ProxyError, classify


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (InvalidRequestError("bad"), 400),
        (ProxyError(401, "key"), 401),
        (ProxyError(404, "model"), 404),
        (BackendConnectionError("refused"), 502),
        (BackendTimeoutError("slow"), 504),
        (BackendProtocolError("cut"), 502),
        (BackendError("other"), 502),
        (BackendStatusError("x", status_code=500), 502),
        (BackendStatusError("x", status_code=503), 502),
        # The upstream refused the request itself: the client's to fix.
        (BackendStatusError("x", status_code=400), 400),
        (BackendStatusError("x", status_code=422), 400),
        (BackendStatusError("x", status_code=413), 413),
        (BackendStatusError("x", status_code=429), 429),
        # The proxy's own upstream key is wrong: not the client's fault.
        (BackendStatusError("x", status_code=401), 502),
        (BackendStatusError("x", status_code=403), 502),
        (RuntimeError("bug"), 500),
    ],
)
def test_status_for_each_failure(exc: BaseException, status: int) -> None:
    failure = classify(exc)
    assert failure.status == status
    assert failure.message
