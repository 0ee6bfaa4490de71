"""The log's rows as values: a session, a response with its tool calls and results."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from attrs import field, frozen

# How the model made its tool calls: its own API's (native), or parlay's prompt-contract
# engine (`PromptedBackend`, whose backend names start "prompted:").
Engine = Literal["prompted", "native"]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def engine_of(backend: str | None) -> Engine | None:
    if backend is None:
        return None
    return "prompted" if backend.startswith("prompted:") else "native"


def model_of(backend: str | None) -> str | None:
    """The model a backend's name names: "prompted:local:SmolLM2.gguf" -> "SmolLM2.gguf",
    "openai:gpt-4o@https://..." -> "gpt-4o", "scripted" -> "scripted"."""
    if backend is None:
        return None
    name = backend
    while name.startswith("prompted:"):
        name = name.removeprefix("prompted:")
    kind, colon, rest = name.partition(":")
    return (rest if colon else kind).split("@", 1)[0] or None


@frozen
class LoggedCall:
    call_id: str
    name: str
    arguments: dict[str, Any] = field(hash=False)
    round: int = 0


@frozen
class LoggedResult:
    call_id: str
    name: str
    output: str = ""
    error: str | None = None


@frozen
class LoggedResponse:
    """One completed turn as it is written to (and read back from) the log."""

    session_id: str
    text: str
    prompt: str | None = None
    backend: str | None = None
    model: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    first_event_ms: float | None = None
    duration_ms: float | None = None
    diagnostics: dict[str, Any] | None = field(default=None, hash=False)
    calls: tuple[LoggedCall, ...] = ()
    results: tuple[LoggedResult, ...] = ()
    created_at: str = field(factory=utc_now)
    id: int | None = None
    # The request a proxy's turn answered, as its load balancer named it (`X-Request-Id`):
    # the same request retried on another replica is logged once.
    request_key: str | None = None

    @property
    def model_name(self) -> str | None:
        """The model, as the backend reported it or else as its name says (a turn that
        failed, or an answer in the engine's own words, reports none)."""
        return self.model or model_of(self.backend)

    @property
    def engine(self) -> Engine | None:
        return engine_of(self.backend)

    def as_dict(self) -> dict[str, Any]:
        out = {
            name: getattr(self, name)
            for name in (
                "id",
                "session_id",
                "created_at",
                "backend",
                "model",
                "prompt",
                "text",
                "finish_reason",
                "prompt_tokens",
                "completion_tokens",
                "first_event_ms",
                "duration_ms",
                "diagnostics",
            )
        }
        out["model"] = self.model_name
        out["engine"] = self.engine
        out["tool_calls"] = [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments, "round": c.round}
            for c in self.calls
        ]
        out["tool_results"] = [
            {"call_id": r.call_id, "name": r.name, "output": r.output, "error": r.error}
            for r in self.results
        ]
        return out


@frozen
class LoggedSession:
    """A logged session. A fork (`Session.fork`, `Session.replay`, a session started
    with `resume=` a response) names the session it branched from, `parent_id`, and the
    last response of that session its context holds, `parent_response_id` (None when it
    branched before the parent's first turn)."""

    id: str
    created_at: str
    source: str
    backend: str | None
    system: str | None
    tools: tuple[str, ...]
    parent_id: str | None = None
    parent_response_id: int | None = None
