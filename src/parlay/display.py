"""How contexts, thunks and diagnostics show in a notebook: readable HTML.

Jupyter calls `_repr_html_` on the last value of a cell; `Context`, `ModelOutputThunk`
and `Diagnostics` delegate here. A conversation shows as turns, each tool call folded
under the turn that made it with its result beside it, and the engine's retries with
their reasons. Everything the model or a user wrote is escaped: a reply holding `<script>`
shows as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from parlay.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult

if TYPE_CHECKING:
    from parlay.diagnostics import Diagnostics

_STYLE = (
    "<style>.parlay{font-family:system-ui,sans-serif;font-size:13px;line-height:1.45}"
    ".parlay .turn{border-left:3px solid #ccd;padding:2px 8px;margin:4px 0}"
    ".parlay .system{border-color:#aaa;color:#555}.parlay .user{border-color:#4a7}"
    ".parlay .assistant{border-color:#47c}.parlay .role{font-weight:600;margin-right:6px}"
    ".parlay pre{white-space:pre-wrap;margin:2px 0;font-size:12px}"
    ".parlay .error{color:#b22}.parlay summary{cursor:pointer}</style>"
)
_TEXT_LIMIT = 4000


def _text(value: str) -> str:
    if len(value) > _TEXT_LIMIT:
        value = value[:_TEXT_LIMIT] + f"… ({len(value) - _TEXT_LIMIT} more characters)"
    return escape(value)


def _call(call: ToolCall, result: ToolResult | None) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False, indent=1, default=str)
    head = f"🔧 <code>{escape(call.name)}</code>"
    if result is None:
        outcome = "<i>no result yet</i>"
    elif result.is_error:
        outcome = f'<pre class="error">{_text(result.error or "")}</pre>'
        head += ' <span class="error">failed</span>'
    else:
        outcome = f"<pre>{_text(result.output)}</pre>"
    return (
        f"<details><summary>{head}</summary><div>arguments<pre>{_text(arguments)}</pre>"
        f"result{outcome}</div></details>"
    )


def _turn(role: str, body: str) -> str:
    return f'<div class="turn {role}"><span class="role">{role}</span>{body}</div>'


def conversation_html(messages: Sequence[Message]) -> str:
    """The messages as turns; each call folded under its turn with its result."""
    results = {m.call_id: m for m in messages if isinstance(m, ToolResult)}
    placed = set()
    parts = []
    for message in messages:
        if isinstance(message, ToolResult):
            if message.call_id not in placed:  # a result whose call is not in sight
                parts.append(_turn("tool", f"<pre>{_text(message.content)}</pre>"))
            continue
        body = f"<pre>{_text(message.content)}</pre>" if message.content else ""
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                placed.add(call.id)
                body += _call(call, results.get(call.id))
        role = "system" if isinstance(message, SystemMessage) else message.role
        parts.append(_turn(role, body))
    return "".join(parts) or "<i>empty</i>"


def diagnostics_html(diagnostics: Diagnostics) -> str:
    """What happened on the way to a reply: retries with their reasons, notes."""
    rows: list[tuple[str, Any]] = []
    if diagnostics.contract_injected:
        how = "under a grammar" if diagnostics.constrained else "free text"
        rows.append(("prompt contract", f"{diagnostics.action_format}, {how}"))
    rows.append(("calls parsed", diagnostics.calls_parsed))
    if diagnostics.streaming:
        rows.append(("streaming", diagnostics.streaming))
    for n, retry in enumerate(diagnostics.retries, 1):
        rows.append(
            (f"retry {n}", f"{retry.reason}: {retry.detail}" if retry.detail else retry.reason)
        )
    if diagnostics.rules:
        rows.append(("rules that acted", ", ".join(diagnostics.rules)))
    if diagnostics.refusal:
        rows.append(("refusal", diagnostics.refusal))
    if diagnostics.unoffered_tools:
        rows.append(("tools not offered", ", ".join(diagnostics.unoffered_tools)))
    if diagnostics.repetition:
        rows.append(("stopped a loop", diagnostics.repetition))
    rows.extend(("note", note) for note in diagnostics.notes)
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{_text(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def page(*sections: str) -> str:
    return f'{_STYLE}<div class="parlay">{"".join(sections)}</div>'


def folded(summary: str, body: str) -> str:
    return f"<details><summary>{escape(summary)}</summary>{body}</details>"


def thunk_html(
    state: str,
    text: str,
    calls: Iterable[ToolCall],
    steps: Sequence[Message],
    diagnostics: Diagnostics | None,
) -> str:
    """A reply: its state, its text, its calls, the loop's steps and diagnostics folded."""
    if state != "done":
        return page(f"<i>{escape(state)}</i>")
    sections = [conversation_html((*steps, AssistantMessage(text, tuple(calls))))]
    if diagnostics is not None:
        sections.append(folded("diagnostics", diagnostics_html(diagnostics)))
    return page(*sections)
