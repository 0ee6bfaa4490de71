"""Contexts side by side: the trunk they share, then each one's turns, row by row.

A `Comparison` is a value of contexts alone (a `ContextDiff` shows as one), so it sits
below the context; `parlay.compare(a, b, ...)` makes one of sessions, contexts or a
`BranchTree`. In a notebook it shows as a table: one column per branch, one row per turn
after the shared trunk, each cell with the answer, its tool calls and their results, the
tokens used, how long it took, the engine's retries and how the turn finished.
Everything a model or a user wrote is escaped (`parlay.display`).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING

from attrs import frozen

from parlay.display import conversation_html, folded, page
from parlay.messages import Message, UserMessage, rendered

if TYPE_CHECKING:
    from parlay.context import Context
    from parlay.turns import Turn

_TABLE_STYLE = (
    "<style>.parlay table.compare{border-collapse:collapse;width:100%}"
    ".parlay table.compare td,.parlay table.compare th{border:1px solid #dde;"
    "vertical-align:top;padding:4px 6px;text-align:left}"
    ".parlay .stats{color:#666;font-size:12px}</style>"
)


@frozen
class TurnFigures:
    """What a turn cost: tokens, milliseconds, the engine's retries, how it finished."""

    prompt_tokens: int | None
    completion_tokens: int | None
    duration_ms: float | None
    retries: tuple[str, ...]
    finish_reason: str | None
    model: str | None

    @classmethod
    def of(cls, turn: Turn) -> TurnFigures:
        prompt = completion = None
        duration = None
        retries: list[str] = []
        finish = model = None
        for output in turn.outputs:
            try:
                usage, diagnostics = output.usage, output.diagnostics
                finish, model = output.finish_reason, output.model
            except Exception:  # a failed turn: it shows as failed, it has no figures
                finish = "error"
                continue
            if usage is not None:
                prompt = (prompt or 0) + usage.prompt_tokens
                completion = (completion or 0) + usage.completion_tokens
            if output.duration_ms is not None:
                duration = (duration or 0.0) + output.duration_ms
            if diagnostics is not None:
                retries.extend(r.reason for r in diagnostics.retries)
        return cls(prompt, completion, duration, tuple(retries), finish, model)

    def html(self) -> str:
        parts = []
        if self.prompt_tokens is not None:
            parts.append(f"{self.prompt_tokens} + {self.completion_tokens} tokens")
        if self.duration_ms is not None:
            parts.append(f"{self.duration_ms:.0f} ms")
        if self.retries:
            parts.append(f"{len(self.retries)} retries ({', '.join(self.retries)})")
        if self.finish_reason is not None:
            parts.append(f"finish: {self.finish_reason}")
        if self.model:
            parts.append(self.model.rsplit("/", 1)[-1])
        return f'<div class="stats">{escape(" · ".join(parts))}</div>'


def _messages(turn: Turn) -> tuple[Message, ...]:
    return rendered(turn.items)


def _prompt(turn: Turn | None) -> str | None:
    if turn is None:
        return None
    first = _messages_of_start(turn)
    return first.content if isinstance(first, UserMessage) else None


def _messages_of_start(turn: Turn) -> Message | None:
    start = turn.start
    rendered = (start,) if isinstance(start, UserMessage) else start.as_messages()  # type: ignore[union-attr]
    return rendered[0] if rendered else None


def _cell(turn: Turn | None, with_prompt: bool) -> str:
    if turn is None:
        return "<td><i>no such turn</i></td>"
    try:
        messages = _messages(turn)
    except Exception as exc:  # a turn that failed renders as its error
        return f'<td><pre class="error">{escape(f"{type(exc).__name__}: {exc}")}</pre></td>'
    if not with_prompt:
        messages = messages[1:]
    return f"<td>{conversation_html(messages)}{TurnFigures.of(turn).html()}</td>"


@frozen
class Comparison:
    """Contexts by name, the trunk all of them share, each one's turns after it."""

    contexts: dict[str, Context]
    trunk: Context
    turns: dict[str, tuple[Turn, ...]]

    @classmethod
    def of(cls, contexts: Mapping[str, Context]) -> Comparison:
        if not contexts:
            raise ValueError("compare needs at least one context")
        named = dict(contexts)
        first = next(iter(named.values()))
        shared = min((len(first.diff(c).trunk.turns) for c in named.values()), default=0)
        trunk = first.at_turn(shared)
        own = {name: ctx.turns[shared:] for name, ctx in named.items()}
        return cls(named, trunk, own)

    @property
    def rows(self) -> list[tuple[Turn | None, ...]]:
        """Turn by turn after the trunk: each branch's turn, None where it has none."""
        longest = max((len(t) for t in self.turns.values()), default=0)
        return [
            tuple(t[n] if n < len(t) else None for t in self.turns.values()) for n in range(longest)
        ]

    def figures(self) -> dict[str, list[TurnFigures]]:
        return {name: [TurnFigures.of(t) for t in turns] for name, turns in self.turns.items()}

    def _repr_html_(self) -> str:
        names = "".join(f"<th>{escape(name)}</th>" for name in self.contexts)
        trunk_turns = len(self.trunk.turns)
        shared = folded(
            f"shared trunk: {trunk_turns} turns ({len(self.trunk)} items)",
            conversation_html(self.trunk.messages()),
        )
        body = [f"<tr><th></th>{names}</tr>"]
        for n, row in enumerate(self.rows, trunk_turns + 1):
            prompts = {_prompt(t) for t in row}
            same = len(prompts) == 1 and None not in prompts
            head = f"turn {n}"
            if same:
                head += f"<pre>{escape(next(iter(prompts)) or '')}</pre>"
            cells = "".join(_cell(t, not same) for t in row)
            body.append(f"<tr><th>{head}</th>{cells}</tr>")
        return _TABLE_STYLE + page(shared, f'<table class="compare">{"".join(body)}</table>')

    def __repr__(self) -> str:
        own = ", ".join(f"{name}: {len(t)}" for name, t in self.turns.items())
        return f"<Comparison trunk {len(self.trunk.turns)} turns; own turns {own}>"


__all__ = ["Comparison", "TurnFigures"]
