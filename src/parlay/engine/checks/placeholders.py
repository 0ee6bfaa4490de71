"""The contract's stand-ins (`"your answer"`, `TOOL_NAME`...), which small models copy and
which must never reach a user as an answer: such a reply is asked again or dropped. So is
a reply of an action's leftover syntax only."""

from __future__ import annotations

import re

from parlay.engine.contract.pieces import NAME_PLACEHOLDER

# Every stand-in the packaged format and retry templates write (tests check the list
# against the templates).
PLACEHOLDERS = (
    "your answer", "your answer to the user", "VALUE", "ARGUMENT", NAME_PLACEHOLDER,
    "why, in a few words",
)  # fmt: skip
_FOLDED = frozenset(p.lower() for p in PLACEHOLDERS)
# A longer text is no stand-in however it is spaced or quoted (and is not read again).
_LONGEST = 4 * max(len(p) for p in PLACEHOLDERS)
_TRIM = " \t\r\n\"'`.!:;,“”‘’()[]{}<>*_"
_WORDLESS = re.compile(r"[\W_]+")
# An action's closing syntax left before an answer ("}} 42"): closing braces or brackets,
# with the quotes, commas and spaces around them.
_LEADING_DEBRIS = re.compile(r"\A[\s\"'`]*[}\]][\s}\]\"'`,:]*")


def is_placeholder(text: str) -> bool:
    """Whether `text` is nothing but one of the contract's stand-ins."""
    return len(text) <= _LONGEST and " ".join(text.split()).strip(_TRIM).lower() in _FOLDED


def may_become_placeholder(text: str) -> bool:
    """Whether `text`, the start of a reply, could still turn out to be a stand-in."""
    if len(text) > _LONGEST:
        return False
    folded = " ".join(text.split()).lstrip(_TRIM).lower()
    return not folded or any(p.startswith(folded.rstrip(_TRIM)) for p in _FOLDED)


def is_debris(text: str) -> bool:
    """Whether `text` has characters but not one letter or digit (an action's leftover
    braces and quotes): no answer at all."""
    return bool(text.strip()) and _WORDLESS.fullmatch(text) is not None


def leading_debris(text: str) -> int:
    """How many characters at the start of `text` are an action's leftover syntax."""
    found = _LEADING_DEBRIS.match(text)
    return found.end() if found else 0
