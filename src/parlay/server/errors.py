"""Which HTTP status and message a failure becomes, for both protocols.

What a client reads never holds the upstream's URL or body: those name the proxy's
infrastructure and may echo its credentials. They go to the log, at debug level, with
anything shaped like a key masked.
"""

from __future__ import annotations

import logging

from attrs import evolve, frozen

from parlay.backends._http import mask_secrets
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendRateLimitError,
    BackendStatusError,
    BackendStreamCutError,
    BackendTimeoutError,
    ContextWindowExceeded,
    InvalidRequestError,
)

logger = logging.getLogger("parlay.server")
# OpenAI's code for a prompt over the window (chat completions and Responses).
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"


@frozen
class Failure:
    """A failure as the client will see it: HTTP status, message, for a rate limit the
    upstream's `Retry-After`, and whether the connection closes after it (a request whose
    body never finished arriving leaves nothing on the connection to read the next from)."""

    status: int
    message: str
    retry_after: str | None = None
    # OpenAI's error code, where one tells the client what to do
    # ("context_length_exceeded": compact the conversation and send it again).
    code: str | None = None
    close: bool = False
    # What kind of upstream failure it was, for the metrics ("timeout", "http_503", ...);
    # None when the failure is not the upstream's.
    upstream: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        headers = {"Retry-After": self.retry_after} if self.retry_after else {}
        if self.close:
            headers["Connection"] = "close"
        return headers


class ProxyError(Exception):
    """Raised inside the proxy for failures that are the client's (bad key, unknown model);
    `close`: the connection is closed after the answer."""

    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.close = close


SHUTTING_DOWN = Failure(503, "the server is shutting down; send the request again")


def classify(exc: BaseException) -> Failure:
    """The status for an exception raised while serving a request.

    Upstream failures are the proxy's gateway statuses (502 down or broken, 504 slow);
    an upstream 429 stays 429 with its `Retry-After`; an upstream 400/422 or 413 means the
    request itself was refused; an upstream 401/403 or 404 is the proxy's own
    misconfiguration, hence 502.
    """
    if isinstance(exc, ProxyError):
        return Failure(exc.status, str(exc), close=exc.close)
    if isinstance(exc, ContextWindowExceeded):
        return Failure(400, str(exc), code=CONTEXT_LENGTH_EXCEEDED, upstream="context_window")
    if isinstance(exc, InvalidRequestError):
        return Failure(400, str(exc))
    if isinstance(exc, BackendTimeoutError):
        return Failure(504, "the model did not answer in time", upstream="timeout")
    if isinstance(exc, BackendConnectionError):
        return Failure(502, "the model server cannot be reached", upstream="connection")
    if isinstance(exc, BackendStatusError):
        return evolve(_status_failure(exc), upstream=f"http_{exc.status_code}")
    if isinstance(exc, BackendStreamCutError):
        cut = "the model's stream was cut before the reply finished"
        return Failure(502, cut, upstream="stream_cut")
    if isinstance(exc, BackendProtocolError):
        outside = "the model server answered outside its protocol"
        return Failure(502, outside, upstream="protocol")
    if isinstance(exc, BackendError):
        return Failure(502, "the model failed", upstream="other")
    return Failure(500, f"internal error in the proxy ({type(exc).__name__}); see its log")


def _status_failure(exc: BackendStatusError) -> Failure:
    code = exc.status_code
    if code == 429:
        after = exc.retry_after if isinstance(exc, BackendRateLimitError) else None
        wait = f"; retry after {after}" if after else ""
        return Failure(429, f"the model server is rate-limiting{wait}", after)
    if code in (401, 403):
        refused = "the model server refused the proxy's upstream credentials"
        return Failure(502, f"{refused} (HTTP {code})")
    if code in (400, 422):
        # Its own words may name the proxy's infrastructure: they go to the log only.
        return Failure(400, f"the model server refused the request (HTTP {code}); see the log")
    if code == 413:
        return Failure(413, "the model server refused the request as too large")
    if code == 404:
        return Failure(502, "the model server has no such model or route (HTTP 404)")
    return Failure(502, f"the model failed (HTTP {code})")


def log_failure(exc: BaseException, where: str) -> Failure:
    """`classify(exc)`, logging what the operator needs: a traceback for a proxy bug, the
    upstream's own words (masked) at debug level for an upstream failure."""
    failure = classify(exc)
    if isinstance(exc, BackendError):
        body = getattr(exc, "body", None)
        detail = f"{exc} (body: {body!r})" if body is not None else str(exc)
        logger.debug("%s: %s", where, mask_secrets(detail))
    elif isinstance(exc, ContextWindowExceeded):
        logger.debug("%s: %s%s", where, exc, f" (the server said: {exc.detail})" * bool(exc.detail))
    if failure.status >= 500 and failure.status not in (502, 503, 504):
        logger.error("%s failed", where, exc_info=exc)
    elif failure.status >= 500:
        logger.warning("%s: %s", where, failure.message)
    return failure
