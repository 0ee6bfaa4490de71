"""The log's rows as values: a session, a response with its tool calls and results."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from attrs import field, frozen


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


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
