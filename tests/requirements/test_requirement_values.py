"""Requirements as values: strings become judged requirements, functions say pass or
fail with a reason, and a judge's reply reads as its first yes or no."""

from __future__ import annotations

import pytest

from parlay import InvalidRequestError
from parlay.requirements import (
    BestOfN,
    JudgedBy,
    RejectionSampling,
    Repair,
    Requirement,
    as_requirements,
    check,
    req,
    simple_validate,
    verdict,
)


def test_plain_strings_become_requirements_judged_by_a_model_and_shown() -> None:
    (plain,) = as_requirements(["Mention the sea"])
    assert plain == req("Mention the sea")
    assert plain.judged_by is JudgedBy.MODEL and plain.in_instruction


def test_a_requirement_with_a_function_is_checked_by_code_and_check_is_never_shown() -> None:
    both = req("At most 20 words", lambda t: len(t.split()) <= 20)
    hidden = check("No apology", lambda t: "sorry" not in t)
    assert both.judged_by is JudgedBy.CODE and both.in_instruction
    assert hidden.judged_by is JudgedBy.CODE and not hidden.in_instruction


def test_a_requirement_needs_a_description_or_a_function() -> None:
    with pytest.raises(ValueError, match="description, a validate function"):
        Requirement()


def test_a_requirement_of_a_function_alone_is_named_after_it() -> None:
    def no_digits(text: str) -> bool:
        return not any(c.isdigit() for c in text)

    made = req(validate=no_digits)
    assert made.name == "no_digits" and not made.in_instruction


def test_something_other_than_a_string_or_requirement_is_refused() -> None:
    with pytest.raises(TypeError, match="a requirement is a string"):
        as_requirements([42])  # type: ignore[list-item]


def test_simple_validate_fails_with_the_reason_it_was_given() -> None:
    validate = simple_validate(lambda t: len(t) < 5, reason="longer than 4 characters")
    assert validate("abc") == (True, "")
    assert validate("abcdef") == (False, "longer than 4 characters")


@pytest.mark.parametrize(
    ("reply", "passed", "reason"),
    [
        ("yes\nIt mentions the sea.", True, "It mentions the sea."),
        ("No. The answer never names a boat.", False, "The answer never names a boat."),
        ("**Yes** - it is short", True, "it is short"),
        ("The answer does not. no", False, ""),
        ("Nope, not at all", False, "the judge answered neither yes nor no: 'Nope, not at all'"),
        ("", False, "the judge answered neither yes nor no: ''"),
    ],
)
def test_the_judges_verdict_is_its_first_yes_or_no(reply: str, passed: bool, reason: str) -> None:
    assert verdict(reply) == (passed, reason)


@pytest.mark.parametrize("make", [RejectionSampling, Repair, BestOfN])
def test_a_budget_below_one_is_refused(make: type) -> None:
    with pytest.raises(InvalidRequestError, match="at least 1"):
        make(0)
