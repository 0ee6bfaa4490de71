"""parlay's own words, which must not come back as an answer.

The continuation that wraps tool results is parlay's text, save what it quotes; so is,
under tool_choice none, the instruction not to call. A small model held to words may
answer with them: such a reply carries nothing of the results. A repeat is told as a copy
(white space and case aside), not by its meaning: a reworded one goes out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from attrs import frozen

from parlay._text import one_line
from parlay.context import Message, ToolResult, UserMessage
from parlay.engine.contract.grounding import echoes, squeezed
from parlay.engine.contract.pieces import RESTATED_CHARS, ContractOptions

# A copy of what the continuation said, the user's words it quotes included, this many
# characters long (white space aside): longer than any quoted figure or name an answer
# would repeat.
_MIN_COPIED = 40


@frozen
class OwnWords:
    """parlay's own words in the continuation a model answers; empty where the
    conversation does not end with tool results."""

    passages: tuple[str, ...] = ()
    # Held text longer than this repeats more than the continuation says: it is let go,
    # so a reply is not scanned again and again as it grows.
    longest: int = 0
    # What a reply may copy and say nothing new, squeezed: the continuation as written
    # (the restated request, "The request: ...", included), its tool results cut out,
    # and the instructions added to the passages.
    said: str = ""
    # The user's words a reply may copy beside parlay's, squeezed: held while a reply may
    # be copying them, dropped only with a clause of parlay's, never a repeat on their
    # own ("Repeat after me: ..." is answered by repeating it).
    quoted: str = ""

    def repeated_by(self, text: str) -> bool:
        """Whether a plain reply only repeats parlay's words, or copies a long part of
        what the continuation said (a copy the token limit cut short is still a copy)."""
        if not self.passages:
            return False
        folded = squeezed(text).strip(".")
        copied = len(folded) >= _MIN_COPIED and folded in self.said
        return copied or any(echoes(text, passage) for passage in self.passages)

    def may_be_repeated_by(self, start: str) -> bool:
        """Whether `start`, the beginning of a reply, could still turn out to repeat it."""
        if not self.passages or len(start) > self.longest:
            return False
        folded = squeezed(start).strip(".")
        return folded in self.said or folded in self.quoted

    def with_instructions(self, texts: Iterable[str], asked: Iterable[str]) -> OwnWords:
        """These words and those of parlay's `texts` (instructions that quote nothing);
        the user's messages (`asked`) are quoted: a reply may copy them around these."""
        added = tuple(text.strip() for text in texts if text.strip())
        if not added:
            return self
        longest = self.longest + 2 * sum(len(text) for text in added)
        said = "\x00".join([self.said, *map(squeezed, added)])
        # Each as long as a restated request, so what a reply is compared with stays short.
        quoted = "\x00".join([self.quoted, *(squeezed(t[:RESTATED_CHARS]) for t in asked)])
        return OwnWords((*self.passages, *added), longest, said, quoted)


def _any_of(parts: Iterable[str]) -> str:
    """A pattern matching any of `parts` that has text, longest first ("" for none)."""
    return "|".join(map(re.escape, sorted({p for p in parts if p.strip()}, key=len, reverse=True)))


def own_passages(text: str, quoted: Iterable[str]) -> tuple[str, ...]:
    """The passages of `text`, a message parlay wrote, left between the `quoted` texts
    it holds (tool results, the user's request): its own words."""
    pieces = re.split(pattern, text) if (pattern := _any_of(quoted)) else [text]
    return tuple(piece for piece in pieces if piece.strip())


def continuation_words(
    messages: Sequence[Message], rendered: Sequence[Message], options: ContractOptions
) -> OwnWords:
    """parlay's own words in the continuation the model answers now: the last rendered
    message, when the conversation ends with tool results (else none)."""
    if not messages or not isinstance(messages[-1], ToolResult):
        return OwnWords()
    if not rendered or not isinstance(rendered[-1], UserMessage):
        return OwnWords()
    quoted: list[str] = []
    outputs: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            quoted += [message.content, one_line(message.content, RESTATED_CHARS)]
        elif isinstance(message, ToolResult):
            output = message.output or ""
            outputs += [output, output[: options.max_result_chars], message.error or ""]
            quoted += [message.name, message.call_id, *outputs[-3:]]
    continuation = rendered[-1].content
    passages = own_passages(continuation, quoted)
    longest = 2 * (sum(len(p) for p in passages) + RESTATED_CHARS)
    # The tool results cut out of what the continuation said, so no copy spans one.
    said = re.sub(pattern, "\x00", continuation) if (pattern := _any_of(outputs)) else continuation
    return OwnWords(passages, longest, squeezed(said))
