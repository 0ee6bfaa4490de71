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
start), or keeping nearly all of it, goes to that slot; a request that branches off one
(a retry rendered anew) goes to the other, so the conversation's next turn finds its
prompt, and if the slot it leaves shares more of the new prompt, that cache is copied
over first (llama.cpp's slot save and restore). Prompts are compared as the text of their
messages, which the model's chat template turns into tokens in order.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Sequence

import httpx
from attrs import define, field, frozen

from parlay.context import Message

logger = logging.getLogger("parlay.model")

SLOTS = 2
# The share of a slot's prompt a request must keep to go to that slot when it does not
# continue it whole: above this, the prompt it would lose is a retry's instruction or a
# reply re-rendered, not a conversation another turn will want.
KEEP_SHARE = 0.9
# A copy saves and restores the whole slot (a file of about 20 MB per 1,000 tokens of a
# small model, a tenth of a second): worth it once it spares reading some 500 tokens.
COPY_AT_LEAST = 2_000  # characters of prompt


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


@frozen
class Route:
    """Where a request goes: its slot, and the slot whose cache is copied there first
    (when that one shares more of the prompt: a copy takes a fraction of a second, reading
    the shared part again seconds to minutes on a CPU)."""

    slot: int
    copy_from: int | None = None


@define
class SlotRouter:
    """The prompt each slot last read, whether it holds a conversation's main line, and
    which slot a new prompt goes to."""

    prompts: list[str] = field(factory=lambda: [""] * SLOTS)
    main: list[bool] = field(factory=lambda: [False] * SLOTS)
    last_used: list[int] = field(factory=lambda: [0] * SLOTS)
    _clock: itertools.count[int] = field(factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(factory=threading.Lock)

    def route(self, messages: Sequence[Message]) -> Route:
        """The route of a request of these messages (recorded as its slot's prompt)."""
        text = prompt_text(messages)
        with self._lock:
            route, main = self._choose(text)
            self.prompts[route.slot], self.main[route.slot] = text, main
            self.last_used[route.slot] = next(self._clock)
            return route

    def _choose(self, text: str) -> tuple[Route, bool]:
        """The route, and whether the request is a main line: a conversation's next turn
        (it keeps nearly all of a slot's prompt) or a new conversation (it shares little
        with any). Anything else branches off a main line (a retry rendered anew): it goes
        to a slot holding no main line if there is one, so that the line's next turn finds
        its prompt, starting from a copy of the cache that shares the most with it."""
        shared = [common_prefix(held, text) for held in self.prompts]
        kept = [n / len(p) if p else 0.0 for n, p in zip(shared, self.prompts, strict=True)]
        best = max(range(SLOTS), key=lambda slot: (kept[slot], shared[slot]))
        if kept[best] >= KEEP_SHARE:
            return Route(best), True
        slot = min(range(SLOTS), key=lambda slot: (self.main[slot], self.last_used[slot]))
        donor = max(range(SLOTS), key=lambda other: shared[other])
        if shared[donor] < COPY_AT_LEAST:
            return Route(slot), True  # a new conversation
        if shared[donor] - shared[slot] >= COPY_AT_LEAST:
            return Route(slot, copy_from=donor), False
        return Route(slot), False


async def copy_slot(server: str, route: Route) -> None:
    """Copy slot `route.copy_from`'s cache into `route.slot` through the llama.cpp server
    at `server` (its root URL, started with a slot save folder). A copy that fails only
    costs the prompt's shared part read again: it is logged, never raised."""
    if route.copy_from is None:
        return
    name = {"filename": f"slot-{route.copy_from}.bin"}
    try:
        async with httpx.AsyncClient(base_url=server, timeout=120) as client:
            for slot, action in ((route.copy_from, "save"), (route.slot, "restore")):
                reply = await client.post(f"/slots/{slot}", params={"action": action}, json=name)
                reply.raise_for_status()
    except httpx.HTTPError as exc:
        logger.debug("the prompt cache of slot %s was not copied: %s", route.copy_from, exc)
