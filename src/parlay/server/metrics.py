"""`GET /metrics`: the proxy's counters in Prometheus' text format (`parlay serve
--metrics`), through the official `prometheus-client`.

What every gateway counts (requests by route, protocol, tool mode and status; latency
and time to the first token; upstream errors by kind; tokens in and out) and what only
parlay knows, read from each reply's `Diagnostics`: calls parsed and repaired, retries by
reason, refusals asked again, calls to tools nobody offered stopped, requests whose
additions were shrunk to fit the window; and turns the log could not take.

With `--workers N` each worker is a process of its own: prometheus-client's
multiprocess mode (`PROMETHEUS_MULTIPROC_DIR`, set by `parlay serve` before the workers
start) adds their values up, so any worker's `/metrics` answers for all of them.
Per request the cost is a few label look-ups and increments (bench/results/gateway.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from parlay.engine.checks.answer_checks import REFUSAL
from parlay.server.errors import classify

if TYPE_CHECKING:
    from parlay.diagnostics import Diagnostics
    from parlay.events import Usage

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: from a cached reply on loopback to a long generation.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# Where the engine's repair of a call leaves its note (`engine.contract.repair`).
REPAIR_NOTE = ": coerced arguments to the schema"
# Which route a path is, so a label never holds a path a client made up.
ROUTES = {
    "/v1/chat/completions": "chat_completions",
    "/chat/completions": "chat_completions",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/v1/models": "models",
    "/models": "models",
}
PROTOCOLS = {
    "chat_completions": "openai",
    "responses": "openai_responses",
    "messages": "anthropic",
    "count_tokens": "anthropic",
}


class Metrics:
    """The proxy's collectors, on a registry of their own (one per app)."""

    def __init__(self, mode: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.mode = mode
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self.registry = CollectorRegistry()
        reg = self.registry

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
            return Counter(f"parlay_{name}", doc, labels, registry=reg)

        self.requests = counter(
            "requests", "Requests answered", ("route", "protocol", "mode", "status")
        )
        self.latency = Histogram(
            "parlay_request_seconds",
            "Seconds from a request's arrival to the end of its answer",
            ("route", "protocol", "mode"),
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.ttft = Histogram(
            "parlay_time_to_first_token_seconds",
            "Seconds from a request's arrival to the model's first output",
            ("protocol", "mode"),
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.upstream_errors = counter("upstream_errors", "Upstream failures", ("kind",))
        self.tokens = counter("tokens", "Tokens the upstream reported", ("direction",))
        self.calls_parsed = counter("engine_calls_parsed", "Tool calls the engine read")
        self.calls_repaired = counter(
            "engine_calls_repaired", "Calls whose arguments the engine fitted to the schema"
        )
        self.retries = counter("engine_retries", "Replies the engine asked again", ("reason",))
        self.refusals = counter("engine_refusals_asked_again", "Refusals the engine asked again")
        self.unoffered = counter(
            "engine_unoffered_calls_stopped",
            "Calls to tools the client did not offer or ruled out, dropped",
        )
        self.shrunk = counter(
            "engine_requests_shrunk", "Requests whose additions were shrunk to fit the window"
        )
        self.log_unwritten = counter("log_turns_unwritten", "Turns the log could not take")
        # The children most requests touch, made once.
        self._request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def request_done(self, path: str, status: int, seconds: float) -> None:
        route = ROUTES.get(path, "other")
        key = (route, self.mode, status)
        children = self._request_children.get(key)
        if children is None:
            protocol = PROTOCOLS.get(route, "none")
            children = (
                self.requests.labels(route, protocol, self.mode, str(status)),
                self.latency.labels(route, protocol, self.mode),
            )
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def first_token(self, protocol: str, seconds: float) -> None:
        self.ttft.labels(protocol, self.mode).observe(seconds)

    def upstream_error(self, exc: BaseException) -> None:
        kind = classify(exc).upstream
        if kind is not None:
            self.upstream_errors.labels(kind).inc()

    def finished(self, usage: Usage | None, diagnostics: Diagnostics | None) -> None:
        if usage is not None:
            self.tokens.labels("in").inc(usage.prompt_tokens)
            self.tokens.labels("out").inc(usage.completion_tokens)
        if diagnostics is None:
            return
        if diagnostics.calls_parsed:
            self.calls_parsed.inc(diagnostics.calls_parsed)
        repaired = sum(note.endswith(REPAIR_NOTE) for note in diagnostics.notes)
        if repaired:
            self.calls_repaired.inc(repaired)
        for retry in diagnostics.retries:
            self.retries.labels(retry.reason).inc()
            if retry.reason == REFUSAL.name:
                self.refusals.inc()
        if diagnostics.unoffered_tools:
            self.unoffered.inc(len(diagnostics.unoffered_tools))
        if diagnostics.shrunk:
            self.shrunk.inc()

    def exposition(self) -> bytes:
        """The text a scrape reads: every worker's values in multiprocess mode."""
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess

        if not self.multiprocess:
            return bytes(generate_latest(self.registry))
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        return bytes(generate_latest(merged))


Clock = Callable[[], float]
