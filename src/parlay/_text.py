"""Text cut to fit one line: a restated request in a prompt, a column in a listing."""

from __future__ import annotations


def one_line(text: str | None, limit: int) -> str:
    """`text` with its whitespace runs made single spaces, cut to `limit` characters with
    an ellipsis when longer."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
