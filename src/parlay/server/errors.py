"""Which HTTP status and message a failure becomes, for both protocols."""

from __future__ import annotations

from attrs import frozen

from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendStatusError,
    BackendTimeoutError,
    InvalidRequestError,
)


@frozen
class Failure:
    """A failure as the client will see it: HTTP status and message."""

    status: int
    message: str


class ProxyError(Exception):
    """Raised inside the proxy for failures that are the client's (bad key, unknown model)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def classify(exc: BaseException) -> Failure:
    """The status for an exception raised while serving a request.

    Upstream failures are the proxy's gateway statuses (502 down or broken, 504 slow);
    an upstream 4xx other than auth means the request itself was refused, so it keeps its
    status; an upstream 401/403 is the proxy's own misconfiguration, hence 502.
    """
    if isinstance(exc, ProxyError):
        return Failure(exc.status, str(exc))
    if isinstance(exc, InvalidRequestError):
        return Failure(400, str(exc))
    if isinstance(exc, BackendTimeoutError):
        return Failure(504, f"the upstream model did not answer in time: {exc}")
    if isinstance(exc, BackendConnectionError):
        return Failure(502, f"the upstream model cannot be reached: {exc}")
    if isinstance(exc, BackendStatusError):
        code = exc.status_code
        if code in (400, 404, 413, 422, 429):
            return Failure(400 if code in (404, 422) else code, f"the upstream refused: {exc}")
        return Failure(502, f"the upstream model failed: {exc}")
    if isinstance(exc, BackendProtocolError):
        return Failure(502, f"the upstream model broke its protocol: {exc}")
    if isinstance(exc, BackendError):
        return Failure(502, f"the upstream model failed: {exc}")
    return Failure(500, f"internal error in the proxy: {type(exc).__name__}: {exc}")
