"""The continuation's own words, which must not come back as an answer.

The continuation that wraps tool results is parlay's text, save what it quotes. A small
model held to words may answer with it, whole or reworded: such a reply carries nothing
of the results, every word of it the continuation's or the user's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from attrs import frozen

from parlay._text import one_line
from parlay.context import Message, ToolResult, UserMessage
from parlay.engine.contract.grounding import echoes, may_echo, squeezed
from parlay.engine.contract.pieces import RESTATED_CHARS, ContractOptions

_WORD = re.compile(r"[^\W_]+")
# A reworded repeat has at least this many words, this many of them the continuation's
# own: "The result is 5." has too few, and its number is no word of the continuation.
_MIN_WORDS, _MIN_OWN = 6, 4
# A copy of the continuation as written, the user's words it quotes included, this many
# characters long (white space aside): longer than any quoted figure or name an answer
# would repeat.
_MIN_COPIED = 40
_ENDINGS = ("ing", "ed", "s")
# Words of parlay's own instructions this long carry their meaning ("call", "result",
# "answer"); shorter ones ("you", "the", "not") are in any clause.
_CONTENT_LETTERS = 4


def _base(word: str) -> str:
    """`word` without a common English ending, so "asks" and "asked" read as one."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def _words(text: str, letters: int = 0) -> list[str]:
    """The words of `text` (of `letters` or more), each as `_base` leaves it."""
    return [_base(w) for w in _WORD.findall(text.lower()) if len(w) >= letters]


@frozen
class OwnWords:
    """parlay's own words in the continuation a model answers; empty where the
    conversation does not end with tool results."""

    passages: tuple[str, ...] = ()
    own: frozenset[str] = frozenset()  # the passages' words
    allowed: frozenset[str] = frozenset()  # theirs, the user's, the calls' names and ids
    # Held text longer than this repeats more than the continuation says: it is let go,
    # so a reply of allowed words only is not scanned again and again as it grows.
    longest: int = 0
    # The continuation as written, squeezed, its tool results cut out: a reply copying a
    # long part of it (the restated request, "The request: ...") says nothing new.
    said: str = ""

    def repeated_by(self, text: str, *, cut: bool = False) -> bool:
        """Whether a plain reply only repeats the continuation: part of it as written,
        or reworded in its own and the user's words. `cut`: the token limit stopped the
        reply, so its last word may be the start of one of those words."""
        if not self.passages:
            return False
        folded = squeezed(text).strip(".")
        copied = len(folded) >= _MIN_COPIED and folded in self.said
        if copied or any(echoes(text, passage) for passage in self.passages):
            return True
        written = _words(text)
        if cut and written and text[-1:].isalnum() and self._starts_allowed(written[-1]):
            written.pop()
        words = set(written)
        return (
            len(written) >= _MIN_WORDS
            and words <= self.allowed
            and len(words & self.own) >= _MIN_OWN
        )

    def _starts_allowed(self, fragment: str) -> bool:
        """Whether `fragment` begins an allowed word, or one with a common ending
        ("tryi" of "trying", kept as "try")."""
        return any(
            word.startswith(fragment)
            or (len(word) >= 3 and any((word + end).startswith(fragment) for end in _ENDINGS))
            for word in self.allowed
        )

    def may_be_repeated_by(self, start: str) -> bool:
        """Whether `start`, the beginning of a reply, could still turn out to repeat it."""
        if not self.passages or len(start) > self.longest:
            return False
        if may_echo(start, self.passages):
            return True
        complete = start if not start[-1:].isalnum() else start[: -len(start.split()[-1])]
        return set(_words(complete)) <= self.allowed

    def with_instructions(self, texts: Iterable[str], asked: Iterable[str]) -> OwnWords:
        """These words and those of parlay's `texts` (instructions that quote nothing),
        with the words the user `asked` allowed beside them. Only content words count as
        parlay's own: "you" or "the" in the user's clause make no repeat."""
        added = tuple(text.strip() for text in texts if text.strip())
        if not added:
            return self
        own = self.own | {w for text in added for w in _words(text, _CONTENT_LETTERS)}
        allowed = {w for text in (*added, *asked) for w in _words(text)}
        longest = self.longest + 2 * sum(len(text) for text in added)
        passages = (*self.passages, *added)
        return OwnWords(passages, own, self.allowed | own | allowed, longest, self.said)


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
    asked: list[str] = []
    outputs: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            asked.append(message.content)
            quoted += [message.content, one_line(message.content, RESTATED_CHARS)]
        elif isinstance(message, ToolResult):
            output = message.output or ""
            outputs += [output, output[: options.max_result_chars], message.error or ""]
            quoted += [message.name, message.call_id, *outputs[-3:]]
            asked += [message.name, message.call_id]  # names a reply may use, not results
    continuation = rendered[-1].content
    passages = own_passages(continuation, quoted)
    own = frozenset(w for p in passages for w in _words(p))
    allowed = own | frozenset(w for a in asked for w in _words(a))
    longest = 2 * (sum(len(p) for p in passages) + RESTATED_CHARS)
    # The tool results cut out of what the continuation said, so no copy spans one.
    said = re.sub(pattern, "\x00", continuation) if (pattern := _any_of(outputs)) else continuation
    return OwnWords(passages, own, allowed, longest, squeezed(said))
