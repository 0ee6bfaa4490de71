"""What fitting a request into the model's window found, as response headers: a client
or an operator sizing a conversation reads the prompt's tokens against the window, and
what parlay took back of its own additions to make it fit."""

from __future__ import annotations

from parlay.engine.contract.fit import FitNote

SHRUNK_HEADER = "x-parlay-shrunk"
# The rendered prompt's tokens against the model's window, when the engine fitted it.
PROMPT_TOKENS_HEADER = "x-parlay-prompt-tokens"
WINDOW_HEADER = "x-parlay-context-window"


def fit_headers(note: FitNote) -> dict[str, str]:
    """What fitting the contract found, as response headers (none when nothing was
    fitted: no tools, or a window nobody knows)."""
    headers = {SHRUNK_HEADER: ",".join(note.shrunk)} if note.shrunk else {}
    if note.window is not None:
        headers[WINDOW_HEADER] = str(note.window)
    if note.tokens is not None:
        headers[PROMPT_TOKENS_HEADER] = f"{note.tokens}; {note.counted}"
    return headers
