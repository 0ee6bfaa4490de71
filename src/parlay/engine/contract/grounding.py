"""Where a call's values came from: the conversation, the few-shot examples, or nowhere.

Small models fill a tool's required arguments whether or not the user gave them: on
BFCL's irrelevance questions most wrong calls carried a value no one had written
(`"string1"`, `"https://example.com/api/interfaces"`, a date for a show the user never
named), or the same text in every field. Lexical checks catch those calls so the retry
policy can ask again:

- `copied_value`: a value that only the few-shot calls show.
- `invented_value`: a required string argument of which fewer than half the words occur
  in anything the model was given to read (system, user and assistant text, tool
  results), or a required number named as an id (`id`, `user_id`, `orderId`) whose
  digits it never shows: ids are given or looked up, never worked out. A string id
  written as a phrase of three or more words with no digit (`item_id="Kak rok shimmer
  nya"`, the request copied in) is no id either. Arguments whose schema offers choices
  (`enum`, `const`, `default`) are not checked.
- `same_value`: one text poured into three or more arguments (a query written into
  every intent list of a classification tool): the model did not choose where it goes.

Words match loosely (`brownie` grounds `brownies`, `Italy` grounds `Italian`; a word with
digits, like `string1`, only as itself; an abbreviation grounds its words and the words
their abbreviation, `NYC` and "New York City"), so the check errs towards letting a call
through. What only world knowledge grounds ("Paris" for "the French capital") is flagged;
a model that gives the value again when asked keeps its call (`kept_insisted_value`).
Over every call of the recorded BFCL runs (bench/results/bfcl*.json) it flagged
none of the 295 right calls, and 25 of the 56 calls Qwen made where no tool fit. A
conversation with letters outside the Latin script is not checked: a value may be a
translation of the user's words, which word matching cannot see; digits read the same
in any script, so ids are checked there too. Over the same runs, every numeric id in a
right call was written in its question; the three that were not (`user_id=1` for a
weather request in Chinese, `template_id=1234567890`) were all calls where no tool fit.
No reply calling on a question that has a right call, right or wrong (1,635 over every
configuration of the recorded runs), had a phrase for an id or one text in three
arguments; both came up only where no tool fit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

from attrs import frozen

from parlay.context import AssistantMessage, Message, ToolResult
from parlay.request import ToolSpec

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
# An argument named as an identifier: `id`, `user_id`, `userId`, `orderID`.
_ID_NAME = re.compile(r"(?:^|_)(?:id|Id|ID)$|[a-z](?:Id|ID)$")
# Words that say nothing about where a value came from ("Hamlet at the Globe").
_FILLER = frozenset(
    ["a", "an", "and", "at", "by", "for", "from", "in", "is", "of", "on", "or", "the", "to", "with"]
)
# Shared prefix that makes two words one (`italy`/`italian`): at least this long, and
# at most two letters short of the shorter word.
_MIN_STEM = 4
# Squeezed characters a reply must have before it counts as repeating its instruction.
_MIN_ECHO = 12
# How many words an abbreviation stands for ("NYC": three).
_ACRONYM_RUN = (2, 5)
# Words (split at spaces, none with a digit) that make a string id a phrase, not an id.
_PHRASE_WORDS = 3


@frozen(slots=False)
class Grounds:
    """The words a conversation gives the model to take values from.

    Read on first use: most replies carry no call to check, and a long conversation is
    not worth scanning for them. `messages` None: nothing to check against, so every
    value passes.
    """

    messages: tuple[Message, ...] | None

    @cached_property
    def _text(self) -> str:
        """Everything the model was given to read, joined once for both checks."""
        return "\n".join(_said(message) for message in self.messages or ())

    @cached_property
    def _read(self) -> tuple[frozenset[str], bool]:
        """The conversation's words, and whether word matching can judge it (False when
        some letter is not Latin: values may then be translations)."""
        if self.messages is None:
            return frozenset(), False
        return frozenset(_WORD.findall(self._text.casefold())), _latin_only(self._text)

    @cached_property
    def _acronyms(self) -> frozenset[str]:
        """The initials of every run of two to five words the conversation writes, with
        and without its filler words: `nyc` for "New York City", `usa` for "United States
        of America"."""
        words = _WORD.findall(self._text.casefold())
        full = _initial_runs(words)
        return full | _initial_runs([w for w in words if w not in _FILLER])

    @cached_property
    def _numbers(self) -> frozenset[str]:
        return frozenset(_DIGITS.findall(self._text))

    def shows_number(self, value: float) -> bool:
        """Whether the conversation writes this whole number's digits (anything else, and
        a conversation not checked, passes)."""
        if self.messages is None or not float(value).is_integer():
            return True
        return str(abs(int(value))) in self._numbers

    def grounds(self, value: str) -> bool:
        """Whether at least half the words of `value` occur in the conversation (loosely).

        Half, not one: `https://example.com/api/interfaces` for a user who asked about "an
        interface" shares a word with the question and is still made up.
        """
        tokens = [t for t in _WORD.findall(value.casefold()) if t not in _FILLER]
        words, checkable = self._read
        if not tokens or not checkable:
            return True
        if len(tokens) >= _ACRONYM_RUN[0] and "".join(t[0] for t in tokens) in words:
            return True  # the user's abbreviation written out: "New York City" for "NYC"
        known = sum(_known(token, words) or self._abbreviates(token) for token in tokens)
        return 2 * known >= len(tokens)

    def _abbreviates(self, token: str) -> bool:
        """`nyc` where the conversation writes "New York City"."""
        # Three letters at least: any two words have initials that make a two-letter word.
        return 3 <= len(token) <= _ACRONYM_RUN[1] and token in self._acronyms


UNCHECKED = Grounds(None)


def grounds_of(messages: Sequence[Message]) -> Grounds:
    """What the conversation says: every text the model reads, tool calls aside."""
    return Grounds(tuple(messages))


def _initial_runs(words: Sequence[str]) -> frozenset[str]:
    low, high = _ACRONYM_RUN
    return frozenset(
        "".join(w[0] for w in words[start : start + size])
        for size in range(low, high + 1)
        for start in range(len(words) - size + 1)
    )


def _said(message: Message) -> str:
    if isinstance(message, ToolResult):
        return message.output or ""
    if isinstance(message, AssistantMessage):
        return message.content or ""
    return message.content


def invented_value(
    arguments: dict[str, Any], spec: ToolSpec, grounds: Grounds
) -> tuple[str, Any] | None:
    """The first required argument, and its value, that the conversation never gave.

    Free-form values only: an argument whose schema lists its choices (`enum`, `const`)
    or has a `default` may be filled without the user naming it.
    """
    properties = spec.parameters.get("properties") or {}
    for key in spec.parameters.get("required") or ():
        schema = properties.get(key)
        if key not in arguments or _has_choices(schema):
            continue
        for value in leaves(arguments[key]):
            if isinstance(value, str) and not grounds.grounds(value):
                return str(key), value
            if isinstance(value, str) and _ID_NAME.search(str(key)) and _is_phrase(value):
                return str(key), value
            if _is_number(value) and _ID_NAME.search(str(key)) and not grounds.shows_number(value):
                return str(key), value
    return None


def _is_phrase(value: str) -> bool:
    return len(value.split()) >= _PHRASE_WORDS and not _DIGITS.search(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def copied_value(
    value: Any, examples: frozenset[str | int | float], path: str = ""
) -> tuple[str, Any] | None:
    """The first argument (its path, like `items[0].name`) and value copied from a few-shot
    call."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (path, value) if value in examples else None
    if isinstance(value, dict):
        pairs = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        pairs = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    for key, item in pairs:
        if found := copied_value(item, examples, key):
            return found
    return None


def copied_answer(text: str, example_answers: frozenset[str]) -> str:
    """The part of a plain answer that repeats a made-up result from the examples, or ""."""
    folded = squeezed(text)
    return next((answer for answer in example_answers if squeezed(answer) in folded), "")


def echoes(text: str, source: str) -> bool:
    """Whether `text` only repeats part of `source` (a reply parroting its instruction)."""
    folded = squeezed(text).strip(".")
    return len(folded) >= _MIN_ECHO and folded in squeezed(source)


def may_echo(text: str, sources: Sequence[str]) -> bool:
    """Whether `text`, the start of a reply, could still turn out to only repeat part of
    one of `sources` (`echoes`)."""
    folded = squeezed(text).strip(".")
    return any(folded in squeezed(source) for source in sources)


def squeezed(text: str) -> str:
    """`text` without white space, case-folded: how a copy is told from its source."""
    return "".join(text.split()).casefold()


def same_word(a: str, b: str) -> bool:
    """Equal, or (letters only) one word in two forms: `brownie`/`brownies`, `italy`/`italian`."""
    return a == b or (a.isalpha() and b.isalpha() and _same_stem(a, b))


def _known(token: str, words: frozenset[str]) -> bool:
    if token in words:
        return True
    if len(token) < _MIN_STEM or not token.isalpha():
        return False
    return any(same_word(token, word) for word in words)


def _same_stem(a: str, b: str) -> bool:
    shorter = min(len(a), len(b))
    if shorter < _MIN_STEM:
        return False
    need = max(_MIN_STEM, shorter - 2)
    return a[:need] == b[:need]


def _has_choices(schema: Any) -> bool:
    return isinstance(schema, dict) and any(k in schema for k in ("enum", "const", "default"))


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside a JSON value: itself, or those in its lists and objects."""
    if isinstance(value, list):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    else:
        yield value


def _latin_only(text: str) -> bool:
    return all(
        unicodedata.name(char, "").startswith("LATIN") for char in set(text) if char.isalpha()
    )
