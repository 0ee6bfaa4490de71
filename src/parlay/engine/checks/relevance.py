"""Whether a request names what one of the tools does: a plain answer to it is suspect.

Small models answer from memory when a tool fits ("The Treaty of Lisbon was signed on
25 May 1995", with `get_event_date` offered), and the rule "call it even if you think you
know" in the contract does not stop them. A lexical look at the user's last message
tells most of those replies apart from right abstentions. Over the plain answers of the
recorded BFCL runs (bench/results/bfcl*.json), a request sharing a word with a tool's
name and at least one more with its name or description was:

- 31 of the 38 plain answers to questions that needed a call, and
- 5 of the 47 right abstentions (questions no tool fits).

So the retry policy asks once more, naming the tool, and the model decides; a call that
then carries made-up values is caught by `grounding`. Requests in other languages than
the tools' descriptions share no words with them: `unrelated_tools` judges only a request
and tools that both read as English (`parlay.engine.checks.language`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from parlay.context import Message, UserMessage
from parlay.engine.checks.language import reads_as_english
from parlay.engine.contract.grounding import same_word
from parlay.request import ToolSpec

# Words of a camelCase, snake_case or dotted name, and of prose.
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Words that say nothing about what a request is for.
_FILLER = frozenset(
    """a about all also an and any are as at be by can could did do does don find for from get
    give he her his how i if in into is it just list me more most my need now of on only or
    other our own please same she should show so some such than that the their them then there
    they this to too us use want was we were what whats when where which who will with would
    you your""".split()
)
# A name word plus one more: one shared word alone ("weather" in "thanks for the weather")
# is too weak a sign.
_NAME_WORDS = 1
_ALL_WORDS = 2


def content_words(text: str) -> frozenset[str]:
    """The lowercased words of `text` that carry meaning (names split at `_`, `.`, case)."""
    return frozenset(
        word
        for word in (part.lower() for part in _PART.findall(text))
        if len(word) > 2 and word not in _FILLER
    )


def at_first_decision(messages: Sequence[Message]) -> bool:
    """Whether the model is to decide on the user's words alone: the last message is
    the user's, not a tool result whose content the next call may follow from."""
    return bool(messages) and isinstance(messages[-1], UserMessage)


def unrelated_tools(messages: Sequence[Message], tools: Iterable[ToolSpec]) -> frozenset[str]:
    """The tools whose name and description share no word with what the user wrote.

    Only at a first decision (the last message is the user's): after a tool result the
    next call may follow from the result, not from the user's words. A request with no
    word to compare (`"on"`) makes no tool unrelated, and neither does a request or a set
    of tools that does not read as English: words of two languages share nothing.
    """
    tools = tuple(tools)
    if not at_first_decision(messages):
        return frozenset()
    said = [m.content for m in messages if isinstance(m, UserMessage)]
    described = " ".join(spec.description for spec in tools)
    if not (reads_as_english(" ".join(said)) and reads_as_english(described)):
        return frozenset()
    asked = frozenset().union(*(_letters(text) for text in said))
    if not asked:
        return frozenset()
    return frozenset(
        spec.name
        for spec in tools
        if not any(
            same_word(word, own)
            for own in _letters(spec.name) | _letters(spec.description)
            for word in asked
        )
    )


def _letters(text: str) -> frozenset[str]:
    """The content words of `text` made of letters (a shared number says nothing of what
    a request is for: `calculate_sum(37.8651, 119.5383)` for a forecast there)."""
    return frozenset(word for word in content_words(text) if word.isalpha())


def fitting_tool(messages: Sequence[Message], tools: Iterable[ToolSpec]) -> ToolSpec | None:
    """The tool the last user message most plainly asks for, or None.

    Only at a first decision (the last message is the user's): after a tool result a plain
    answer is what is expected.
    """
    if not at_first_decision(messages):
        return None
    asked = content_words(messages[-1].content)
    best: tuple[int, int] = (0, 0)
    chosen: ToolSpec | None = None
    for spec in tools:
        name = content_words(spec.name)
        described = name | content_words(spec.description)
        in_name = sum(any(same_word(w, n) for n in name) for w in asked)
        in_all = sum(any(same_word(w, d) for d in described) for w in asked)
        if in_name >= _NAME_WORDS and in_all >= _ALL_WORDS and (in_name, in_all) > best:
            best, chosen = (in_name, in_all), spec
    return chosen
