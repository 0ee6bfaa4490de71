"""One system's reply to one question, and how BFCL's rules judge it.

Every outcome is a flat JSON object, so the store can hold it line by line and the report
can read it back without this code's classes:

- `right`: BFCL's rule for the category (`bench.bfcl.checker`);
- `well_formed`: at least one call, every call naming an offered function with an object
  of arguments (whatever its values);
- `abstained`: no call at all (on live_irrelevance, `right` is the same thing);
- `error_type` "request_error": the request itself failed (server gone, exception in
  the system). It counts as a miss on every measure and is asked again only with
  `--retry-errors`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from bench.bfcl.checker import check
from bench.bfcl.data import Question

REQUEST_ERROR = "request_error"
TEXT_KEPT = 600


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


@frozen
class Reply:
    """What a system gave back: its calls (name, arguments as parsed), its text, and how
    it went. `error` is set only when no reply came (a failed request)."""

    calls: tuple[tuple[str, Any], ...] = field(default=(), converter=_tuple)
    text: str = ""
    error: str = ""
    seconds: float = 0.0
    # What the system noted on the way (retries of the engine, toolproxy's parse error).
    retries: tuple[str, ...] = field(default=(), converter=_tuple)
    notes: tuple[str, ...] = field(default=(), converter=_tuple)
    # The engine's rules that acted on the reply (`Diagnostics.rules`); parlay only.
    rules: tuple[str, ...] = field(default=(), converter=_tuple)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # The first reply's lean to answering in words (`Diagnostics.answer_share`); parlay only.
    answer_share: float | None = None
    # Requests sent to the model for the question (the engine's cost; None: not counted).
    requests: int | None = None


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def well_formed(question: Question, calls: tuple[tuple[str, Any], ...]) -> bool:
    names = {function["name"] for function in question.functions}
    return bool(calls) and all(
        name in names and isinstance(arguments, Mapping) for name, arguments in calls
    )


def judge(question: Question, reply: Reply) -> dict[str, Any]:
    """The verdicts on a reply: right, well_formed, abstained, and why it is wrong."""
    if reply.error:
        failed = dict.fromkeys(("right", "well_formed", "abstained"), False)
        return {**failed, "error_type": REQUEST_ERROR, "error": reply.error}
    plain = [(name, dict(a) if isinstance(a, Mapping) else {}) for name, a in reply.calls]
    verdict = check(question.category, question.functions, plain, question.ground_truth)
    return {
        "right": verdict.valid,
        "well_formed": well_formed(question, reply.calls),
        "abstained": not reply.calls,
        "error_type": verdict.error_type,
        "error": verdict.error,
    }


def record(question: Question, reply: Reply, **keys: Any) -> dict[str, Any]:
    """The stored outcome: `keys` (model, system, config, half, commit...) first."""
    return {
        **keys,
        "category": question.category,
        "question": question.id,
        **judge(question, reply),
        "calls": [{"name": n, "arguments": jsonable(a)} for n, a in reply.calls],
        "text": reply.text[:TEXT_KEPT],
        "retries": list(reply.retries),
        "notes": list(reply.notes),
        "rules": list(reply.rules),
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "seconds": round(reply.seconds, 2),
        "answer_share": reply.answer_share,
        "requests": reply.requests,
    }
