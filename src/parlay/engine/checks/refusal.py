"""Refusal detection: a maintained, user-extensible phrase set.

A *hard* refusal declines the task ("I can't help with that"); a *soft* one claims an
environment limitation ("I don't have access to real-time data"): with tools on the table
that is a failed tool turn, since a tool is the access. An answer with neither is a
legitimate answer, tools or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from attrs import frozen

# Written as `_normalise` leaves a text: lower case, straight apostrophes, single spaces.
HARD_PHRASES: tuple[str, ...] = (
    "i can't help with", "i cannot help with", "i can't assist with", "i cannot assist with",
    "i can't do that", "i cannot do that", "i won't be able to", "i will not be able to",
    "i'm not able to help", "i am not able to help", "i must decline", "i have to decline",
    "i'm sorry, but i can't", "i'm sorry, but i cannot", "sorry, i can't", "sorry, i cannot",
    "i refuse to", "i'm unable to help", "i am unable to help", "i'm unable to assist",
    "i am unable to assist",
    "抱歉，我不能", "抱歉，我无法", "对不起，我不能", "对不起，我无法", "我不能帮", "我无法帮",
    "我不能协助", "我拒绝",
)  # fmt: skip
SOFT_PHRASES: tuple[str, ...] = (
    "i don't have access to", "i do not have access to", "i don't have the ability to",
    "i do not have the ability to", "i don't have real-time", "i do not have real-time",
    "i can't access", "i cannot access", "i'm unable to access", "i am unable to access",
    "i can't browse", "i cannot browse", "i can't check", "i cannot check", "i can't look up",
    "i cannot look up", "i'm not able to access", "i am not able to access",
    "as an ai language model", "as an ai, i", "i don't have any available",
    "i do not have any available", "i don't have any information about",
    "i do not have any information about", "i don't have the capability",
    "i do not have the capability", "no access to real-time", "not able to provide real-time",
    "unable to provide real-time",
    "我无法访问", "我不能访问", "我没有访问", "无法获取实时", "无法提供实时", "我无法查询",
    "作为一个人工智能", "作为一个ai", "作为ai",
)  # fmt: skip

_APOSTROPHES = str.maketrans("’‘`", "'''")
_SPACES = re.compile(r"\s+")
_QUESTION = re.compile(r"\?(?:\s|$)|？")


@frozen
class RefusalSignal:
    kind: Literal["hard", "soft"]
    phrase: str


@frozen
class RefusalPhrases:
    """The phrases to look for; `extend` returns a new set with yours added."""

    hard: tuple[str, ...] = HARD_PHRASES
    soft: tuple[str, ...] = SOFT_PHRASES

    def extend(self, hard: Iterable[str] = (), soft: Iterable[str] = ()) -> RefusalPhrases:
        return RefusalPhrases(
            self.hard + tuple(map(_normalise, hard)), self.soft + tuple(map(_normalise, soft))
        )


DEFAULT_REFUSALS = RefusalPhrases()


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text.translate(_APOSTROPHES).lower())


def detect_refusal(text: str, phrases: RefusalPhrases = DEFAULT_REFUSALS) -> RefusalSignal | None:
    """The first refusal phrase in `text` (hard ones win over soft ones), or None."""
    if not text:
        return None
    normal = _normalise(text)
    for phrase in phrases.hard:
        if phrase in normal:
            return RefusalSignal("hard", phrase)
    for phrase in phrases.soft:
        if phrase in normal:
            return RefusalSignal("soft", phrase)
    return None


def asks_user(text: str) -> bool:
    """Whether a reply asks the user something (a sentence ending in a question mark):
    a question for a missing value, not a refusal, even when it says it "can't check"."""
    return bool(_QUESTION.search(text))
