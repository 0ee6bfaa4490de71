"""Which of the embedded llama.cpp server's two slots a request goes to, so that a retry
does not throw away the conversation's prompt cache.

llama.cpp keeps the prompt it last read in each slot and reads a new prompt only from
where it differs. With one slot, every request replaces the last: when the engine asks
again with a prompt rendered anew (the answer-only grammar, a retry without the
examples), the prompt cache then holds the retry, and the conversation's next turn,
which continues the first attempt and not the retry, is read again from the point where
the two part (measured: turn 2 of Claude Code's conversation on SmolLM2 waited 23 s for
its first token instead of 1 s). llama.cpp's host-memory cache does not help there: it
saves a slot's prompt only when less than half of it would be kept.

The rule, with two slots: a request continuing a slot's prompt (that prompt whole at its
start), or keeping nearly all of it, goes to that slot; any other request goes to the
slot used least recently, so the other one keeps its prompt. Prompts are compared as the
text of their messages, which the model's chat template turns into tokens in order.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

from attrs import define, field

from parlay.context import Message

SLOTS = 2
# The share of a slot's prompt a request must keep to go to that slot when it does not
# continue it whole: above this, the prompt it would lose is a retry's instruction or a
# reply re-rendered, not a conversation another turn will want.
KEEP_SHARE = 0.9


def prompt_text(messages: Sequence[Message]) -> str:
    """The request's messages as one text, in order: their reprs, which show every field
    (the role by its class, the text, any calls) the chat template renders."""
    return "\x00".join(repr(m) for m in messages)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common start of `a` and `b` (slices compared in C, a
    binary search over their length)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@define
class SlotRouter:
    """The prompt each slot last read, and which slot a new prompt goes to."""

    prompts: list[str] = field(factory=lambda: [""] * SLOTS)
    last_used: list[int] = field(factory=lambda: [0] * SLOTS)
    _clock: itertools.count[int] = field(factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(factory=threading.Lock)

    def route(self, messages: Sequence[Message]) -> int:
        """The slot for a request of these messages (recorded as that slot's prompt)."""
        text = prompt_text(messages)
        with self._lock:
            slot = self._choose(text)
            self.prompts[slot] = text
            self.last_used[slot] = next(self._clock)
            return slot

    def _choose(self, text: str) -> int:
        best, kept = 0, -1.0
        for slot, held in enumerate(self.prompts):
            if not held:
                continue
            share = common_prefix(held, text) / len(held)
            if share > kept:
                best, kept = slot, share
        if kept >= KEEP_SHARE:
            return best
        return min(range(SLOTS), key=lambda slot: self.last_used[slot])
