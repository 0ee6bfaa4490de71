"""The turn policy: what a turn allows, decided once from the request."""

from __future__ import annotations

import pytest

from parlay.engine.policy import TurnPolicy

from .prompted_kit import ask


@pytest.mark.parametrize(
    ("choice", "first", "after_a_retry", "last"),
    [
        # (streaming of the first attempt, of a middle one after a retry, of the last)
        ("auto", "hybrid", "hybrid", "hybrid"),
        ("required", "buffered", "buffered", "live"),
        ("add", "buffered", "buffered", "live"),
        ("none", "live", "live", "live"),
    ],
)
def test_each_attempt_streams_as_its_place_in_the_turn_allows(
    choice: str, first: str, after_a_retry: str, last: str
) -> None:
    policy = TurnPolicy.of(ask("1+2", choice), retries=2)
    assert policy.streaming(policy.may_retry(0), retried=False) == first
    assert policy.streaming(policy.may_retry(1), retried=True) == after_a_retry
    assert policy.streaming(policy.may_retry(2), retried=True) == last


def test_under_none_nothing_is_judged_again_but_the_budget_still_counts() -> None:
    policy = TurnPolicy.of(ask("hi", "none"), retries=2)
    assert not policy.may_call and not policy.may_retry(0)
    assert policy.budget_left(1) and not policy.budget_left(2)  # words asked again


def test_a_named_choice_must_call_that_tool_and_parallel_calls_follow_the_request() -> None:
    policy = TurnPolicy.of(ask("1+2", "add").replace(parallel_tool_calls=False), retries=0)
    assert policy.must_call and policy.tool == "add" and not policy.model_decides
    assert not policy.parallel and not policy.may_retry(0)
    assert policy.streaming(False, retried=False) == "live"
