"""Which status each failure becomes, in one table (parlay's BackendError subclasses)."""

from __future__ import annotations

import pytest

from parlay.backends._http import mask_secrets, schema_rejected
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
        # The upstream has no such model or route: the proxy's settings, not the client's.
        (BackendStatusError("x", status_code=404), 502),
        (BackendRateLimitError("x", retry_after="7"), 429),
        (BackendStreamCutError("cut"), 502),
        (RuntimeError("bug"), 500),
    ],
)
def test_status_for_each_failure(exc: BaseException, status: int) -> None:
    failure = classify(exc)
    assert failure.status == status
    assert failure.message


LEAKY = "http://10.0.0.7:8080/v1/chat/completions answered HTTP {}: bad key sk-live-123456789"


@pytest.mark.parametrize(
    "exc",
    [
        BackendStatusError(LEAKY.format(500), status_code=500, body={"error": "sk-live-1"}),
        BackendStatusError(LEAKY.format(401), status_code=401),
        BackendStatusError(LEAKY.format(400), status_code=400),
        BackendRateLimitError(LEAKY.format(429), retry_after="30"),
        BackendConnectionError("cannot reach http://10.0.0.7:8080/v1/chat/completions"),
        BackendTimeoutError("http://10.0.0.7:8080/v1/chat/completions did not answer"),
        BackendStreamCutError("the stream from http://10.0.0.7:8080/v1 was cut"),
        BackendProtocolError("http://10.0.0.7:8080/v1 sent an error mid-stream: sk-live-1"),
    ],
)
def test_what_a_client_reads_never_names_the_upstream(exc: BaseException) -> None:
    """Every upstream error showed the upstream's URL, and its body verbatim."""
    message = classify(exc).message
    assert "10.0.0.7" not in message and "sk-live" not in message and "http" not in message


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (BackendStatusError("x", status_code=503), "http_503"),
        (BackendRateLimitError("x", retry_after="30"), "http_429"),
        (BackendConnectionError("x"), "connection"),
        (BackendTimeoutError("x"), "timeout"),
        (BackendStreamCutError("x"), "stream_cut"),
        (BackendProtocolError("x"), "protocol"),
        (ContextWindowExceeded("x", tokens=9000, window=8192), "context_window"),
        (BackendError("x"), "other"),
        (InvalidRequestError("x"), None),
        (ProxyError(401, "x"), None),
        (RuntimeError("x"), None),
    ],
)
def test_each_upstream_failure_has_the_kind_the_metrics_count(
    exc: BaseException, kind: str | None
) -> None:
    assert classify(exc).upstream == kind


def test_a_429_keeps_its_retry_after_and_an_upstream_401_says_whose_credentials() -> None:
    failure = classify(BackendRateLimitError("x", retry_after="30"))
    assert failure.headers == {"Retry-After": "30"}
    assert "upstream credentials" in classify(BackendStatusError("x", status_code=401)).message


@pytest.mark.parametrize(
    ("status", "message", "rejected"),
    [
        (400, "failed to parse grammar", True),
        (400, "Invalid schema for response_format 'action'", True),
        (422, "json_schema: unsupported keyword", True),
        (400, "maximum context length is 4096 tokens", False),
        (500, "grammar backend crashed", False),
        (429, "rate limited while compiling the schema", False),
        (401, "invalid key for schema service", False),
    ],
)
def test_only_a_400_about_the_schema_lets_the_engine_go_unconstrained(
    status: int, message: str, rejected: bool
) -> None:
    exc = BackendStatusError(message, status_code=status, body={"error": {"message": message}})
    assert schema_rejected(exc) is rejected


def test_credentials_in_upstream_text_are_masked() -> None:
    text = 'Incorrect API key provided: sk-proj-abcdef123456. {"api_key": "k-9f8e7d6c5b4a3"}'
    masked = mask_secrets(text + " Bearer tok_0123456789 and my-own-secret", ("my-own-secret",))
    for secret in ("abcdef123456", "9f8e7d6c5b4a3", "tok_0123456789", "my-own-secret"):
        assert secret not in masked
    assert masked.startswith("Incorrect API key provided: sk-***")
