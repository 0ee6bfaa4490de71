"""Wilson intervals and the agreement of two shares."""

from __future__ import annotations

import pytest
from bench.bfcl.stats import mean, wilson


def test_wilson_matches_the_textbook_values() -> None:
    # 8 of 10: (0.4902, 0.9433); 0 of 10: (0, 0.2775); 50 of 100: (0.4038, 0.5962).
    assert (wilson(8, 10).low, wilson(8, 10).high) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert (wilson(0, 10).low, wilson(0, 10).high) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert (wilson(50, 100).low, wilson(50, 100).high) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert wilson(10, 10).high == 1.0 and wilson(10, 10).low == pytest.approx(0.7225, abs=1e-4)


def test_the_interval_narrows_with_more_questions_and_holds_the_share() -> None:
    small, large = wilson(4, 10), wilson(40, 100)
    assert large.high - large.low < small.high - small.low
    for share in (small, large, wilson(0, 3), wilson(3, 3)):
        assert 0.0 <= share.low <= share.value <= share.high <= 1.0


def test_nothing_measured_is_shown_as_a_dash_and_agrees_with_anything() -> None:
    assert wilson(0, 0).render() == "–"
    assert wilson(0, 0).agrees_with(wilson(9, 10))
    with pytest.raises(ValueError):
        wilson(5, 4)


def test_overlapping_intervals_agree_and_parted_ones_do_not() -> None:
    assert wilson(5, 10).agrees_with(wilson(7, 10))
    assert not wilson(2, 40).agrees_with(wilson(38, 40))
    assert wilson(8, 10).render() == "80 % (49–94)"


def test_the_balanced_score_averages_the_shares_and_their_ends() -> None:
    balanced = mean(wilson(8, 10), wilson(5, 10))
    assert balanced.value == pytest.approx(0.65)
    assert balanced.low == pytest.approx((wilson(8, 10).low + wilson(5, 10).low) / 2)
    assert not mean(wilson(8, 10), wilson(0, 0)).measured
