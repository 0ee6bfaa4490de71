"""Two fixed halves of every category: one to tune on, one to validate a change on.

A question's half is decided by the sha256 of its BFCL id alone: even -> "tune", odd ->
"validate". It depends on nothing else (not the file order, the category's size, the
Python version or a seed), so it is the same in every run and every version of this
code, and a question never changes sides. Within a half, questions are taken in the
order of the same hash, so a cap of 40 is a fixed pseudo-random 40, and raising the cap
only adds questions: the outcomes already in the store stay part of the selection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Literal, TypeVar

from bench.bfcl.data import Question, load_category

Half = Literal["tune", "validate"]
HALVES: tuple[Half, ...] = ("tune", "validate")
T = TypeVar("T")


def id_hash(question_id: str) -> int:
    return int.from_bytes(hashlib.sha256(question_id.encode("utf-8")).digest(), "big")


def half_of(question_id: str) -> Half:
    return "tune" if id_hash(question_id) % 2 == 0 else "validate"


def in_half(ids: Iterable[str], half: Half) -> list[str]:
    """The ids of one half, in the order of their hash."""
    return sorted((i for i in ids if half_of(i) == half), key=id_hash)


def pick(questions: Sequence[Question], half: Half, cap: int | None) -> tuple[Question, ...]:
    """At most `cap` questions of one half (None: all of it), in hash order."""
    by_id = {q.id: q for q in questions}
    chosen = in_half(by_id, half)
    if cap is not None:
        chosen = chosen[:cap]
    return tuple(by_id[i] for i in chosen)


def select(category: str, half: Half, cap: int | None) -> tuple[Question, ...]:
    """The questions of one category's half (refuses the held-out categories)."""
    return pick(load_category(category), half, cap)


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """Round-robin over the groups, so a run cut short still covers all of them."""
    out: list[T] = []
    for index in range(max((len(g) for g in groups), default=0)):
        out.extend(group[index] for group in groups if index < len(group))
    return out
