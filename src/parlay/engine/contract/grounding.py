"""Where a call's values came from: the conversation, the few-shot examples, or nowhere.

`copied_value` finds a value only the examples show; `invented_value` a required string
of which fewer than half the words occur in what the model read, or an id whose digits it
never shows, or a string id written as a phrase. Arguments with choices (`enum`, `const`,
`default`) pass. Words match loosely (`brownie`/`brownies`, `NYC`/"New York City") so the
check errs towards letting a call through; a conversation with non-Latin letters is only
checked for ids, since a value may translate the user's words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

from attrs import frozen

from parlay.context import Message, ToolResult
from parlay.request import ToolSpec

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
# An argument named as an identifier: `id`, `user_id`, `userId`, `orderID`.
_ID_NAME = re.compile(r"(?:^|_)(?:id|Id|ID)$|[a-z](?:Id|ID)$")
# Words that say nothing about where a value came from ("Hamlet at the Globe").
_FILLER = frozenset("a an and at by for from in is of on or the to with".split())
# Schema keys that list a value's choices: such a value needs no grounding.
_CHOICES = {"enum", "const", "default"}
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
    """The words a conversation gives the model (every text it reads, tool calls aside),
    read on first use (most replies carry no call to check)."""

    messages: tuple[Message, ...]

    @cached_property
    def _text(self) -> str:
        said = (m.output if isinstance(m, ToolResult) else m.content for m in self.messages)
        return "\n".join(text or "" for text in said)

    @cached_property
    def _words(self) -> frozenset[str] | None:
        """The conversation's words; None where matching them cannot judge (Latin only)."""
        latin = _latin_only(self._text)
        return frozenset(_WORD.findall(self._text.casefold())) if latin else None

    @cached_property
    def _acronyms(self) -> frozenset[str]:
        """The initials of every run of words, with and without filler: `nyc`, `usa`."""
        words = _WORD.findall(self._text.casefold())
        return _initial_runs(words) | _initial_runs([w for w in words if w not in _FILLER])

    @cached_property
    def _numbers(self) -> frozenset[str]:
        return frozenset(_DIGITS.findall(self._text))

    def shows_number(self, value: float) -> bool:
        """Whether the conversation writes this whole number's digits (others pass)."""
        return not float(value).is_integer() or str(abs(int(value))) in self._numbers

    def grounds(self, value: str) -> bool:
        """Whether at least half the words of `value` occur in the conversation (loosely):
        a made-up URL may share one word with the question."""
        tokens = [t for t in _WORD.findall(value.casefold()) if t not in _FILLER]
        words = self._words
        if not tokens or words is None:
            return True
        if len(tokens) >= _ACRONYM_RUN[0] and "".join(t[0] for t in tokens) in words:
            return True  # the user's abbreviation written out: "New York City" for "NYC"
        # An abbreviation has three letters at least: any two words' initials make one of two.
        known = sum(
            _known(token, words) or (3 <= len(token) <= _ACRONYM_RUN[1] and token in self._acronyms)
            for token in tokens
        )
        return 2 * known >= len(tokens)


def _initial_runs(words: Sequence[str]) -> frozenset[str]:
    low, high = _ACRONYM_RUN
    return frozenset(
        "".join(w[0] for w in words[start : start + size])
        for size in range(low, high + 1)
        for start in range(len(words) - size + 1)
    )


def invented_value(
    arguments: dict[str, Any], spec: ToolSpec, grounds: Grounds
) -> tuple[str, Any] | None:
    """The first required free-form argument, and its value, the conversation never gave."""
    properties = spec.parameters.get("properties") or {}
    for key in spec.parameters.get("required") or ():
        schema = properties.get(key)
        if key not in arguments or (isinstance(schema, dict) and schema.keys() & _CHOICES):
            continue
        is_id = bool(_ID_NAME.search(str(key)))
        for value in leaves(arguments[key]):
            if isinstance(value, str) and (
                not grounds.grounds(value) or (is_id and _is_phrase(value))
            ):
                return str(key), value
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and is_id and not grounds.shows_number(value):
                return str(key), value
    return None


def _is_phrase(value: str) -> bool:
    return len(value.split()) >= _PHRASE_WORDS and not _DIGITS.search(value)


def copied_value(
    value: Any, examples: frozenset[str | int | float], path: str = ""
) -> tuple[str, Any] | None:
    """The first argument (a path like `items[0].name`) and value copied from an example."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (path, value) if value in examples else None
    if isinstance(value, dict):
        pairs = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        pairs = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    return next(filter(None, (copied_value(item, examples, key) for key, item in pairs)), None)


def copied_answer(text: str, example_answers: frozenset[str]) -> str:
    """The part of a plain answer that repeats a made-up result from the examples, or "":
    the longest such result, so the same one is named in every process (a set's order
    is not)."""
    folded = squeezed(text)
    ordered = sorted(example_answers, key=lambda answer: (-len(answer), answer))
    return next((answer for answer in ordered if squeezed(answer) in folded), "")


def echoes(text: str, source: str) -> bool:
    """Whether `text` only repeats part of `source` (a reply parroting its instruction)."""
    folded = squeezed(text).strip(".")
    return len(folded) >= _MIN_ECHO and folded in squeezed(source)


def squeezed(text: str) -> str:
    """`text` without white space, case-folded: how a copy is told from its source."""
    return "".join(text.split()).casefold()


def _known(token: str, words: frozenset[str]) -> bool:
    """`token` among `words`, or (letters only) one of them in another form:
    `brownie`/`brownies`, `italy`/`italian`."""
    if token in words:
        return True
    if len(token) < _MIN_STEM or not token.isalpha():
        return False
    for word in words:
        need = max(_MIN_STEM, min(len(token), len(word)) - 2)
        if len(word) >= _MIN_STEM and word.isalpha() and token[:need] == word[:need]:
            return True
    return False


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside a JSON value: itself, or those in its lists and objects."""
    if isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from leaves(item)
    else:
        yield value


def _latin_only(text: str) -> bool:
    return all(
        unicodedata.name(char, "").startswith("LATIN") for char in set(text) if char.isalpha()
    )
