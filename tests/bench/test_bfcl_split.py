"""The tune and validate halves: fixed by the id's hash, disjoint, about half each."""

from __future__ import annotations

import hashlib

import pytest
from bench.bfcl import split
from bench.bfcl.data import DEV_CATEGORIES, Question, data_dir, load_category

IDS = [f"simple_python_{i}" for i in range(400)] + [f"live_irrelevance_{i}-0-0" for i in range(300)]


def _bfcl_installed() -> bool:
    try:
        data_dir()
    except FileNotFoundError:
        return False
    return True


def question(qid: str) -> Question:
    return Question(qid, "simple_python", (), (), ())


def test_a_question_half_is_the_parity_of_its_ids_sha256() -> None:
    # Written out, so a change of rule (another hash, another encoding) cannot pass.
    assert split.half_of("simple_python_0") == (
        "tune" if hashlib.sha256(b"simple_python_0").digest()[-1] % 2 == 0 else "validate"
    )
    known = {
        i: split.half_of(i) for i in ("simple_python_0", "multiple_7", "live_irrelevance_5-1-0")
    }
    assert known == {
        "simple_python_0": "validate",
        "multiple_7": "validate",
        "live_irrelevance_5-1-0": "tune",
    }


def test_the_halves_are_disjoint_cover_everything_and_are_about_half() -> None:
    tune, validate = split.in_half(IDS, "tune"), split.in_half(IDS, "validate")
    assert not set(tune) & set(validate)
    assert set(tune) | set(validate) == set(IDS)
    assert 0.45 < len(tune) / len(IDS) < 0.55


def test_the_split_does_not_depend_on_order_or_on_the_other_questions() -> None:
    alone = {i: split.half_of(i) for i in IDS}
    shuffled = list(reversed(IDS))[::2]
    assert all(i in split.in_half(shuffled, alone[i]) for i in shuffled)


def test_a_larger_cap_only_adds_questions() -> None:
    questions = [question(i) for i in IDS]
    small = [q.id for q in split.pick(questions, "validate", 10)]
    large = [q.id for q in split.pick(questions, "validate", 40)]
    assert large[:10] == small
    assert len(large) == 40
    assert [q.id for q in split.pick(list(reversed(questions)), "validate", 10)] == small


def test_interleave_takes_one_from_each_group_in_turn() -> None:
    assert split.interleave([[1, 2, 3], ["a"], [10, 20]]) == [1, "a", 10, 2, 20, 3]


@pytest.mark.skipif(not _bfcl_installed(), reason="bfcl-eval data not installed")
@pytest.mark.parametrize("category", DEV_CATEGORIES)
def test_every_category_splits_into_two_disjoint_halves(category: str) -> None:
    ids = [q.id for q in load_category(category)]
    tune, validate = split.select(category, "tune", None), split.select(category, "validate", None)
    assert {q.id for q in tune}.isdisjoint({q.id for q in validate})
    assert len(tune) + len(validate) == len(ids)
    if len(ids) >= 100:
        assert 0.4 < len(tune) / len(ids) < 0.6
