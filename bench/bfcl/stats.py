"""Shares with their 95 % Wilson intervals, and whether two of them agree.

The Wilson score interval stays inside [0, 1] and is honest at 0 % and 100 % and for
small n, where the normal approximation gives a zero-width or negative interval. For the
balanced score (the mean of two shares), the interval is the mean of the two intervals'
ends: wider than the exact one for independent samples, so an agreement read from it
errs towards "agree" and a difference beyond it is a real one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from attrs import frozen

Z95 = 1.959963984540054


@frozen
class Share:
    """A share with its 95 % interval; `n` 0 means nothing was measured."""

    value: float
    low: float
    high: float
    n: int
    hits: float = 0.0

    @property
    def measured(self) -> bool:
        return self.n > 0

    def render(self) -> str:
        if not self.measured:
            return "–"
        return f"{100 * self.value:.0f} % ({100 * self.low:.0f}–{100 * self.high:.0f})"

    def agrees_with(self, other: Share) -> bool:
        """The two intervals overlap (nothing measured agrees with anything)."""
        if not (self.measured and other.measured):
            return True
        return self.low <= other.high and other.low <= self.high


NOTHING = Share(0.0, 0.0, 1.0, 0)


def wilson(hits: int, n: int, z: float = Z95) -> Share:
    """The share hits/n with its Wilson score interval."""
    if n <= 0:
        return NOTHING
    if not 0 <= hits <= n:
        raise ValueError(f"{hits} hits out of {n}")
    p = hits / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 or n hits the end is exactly 0 or 1; floating error would leave a hair off it.
    low = 0.0 if hits == 0 else max(0.0, centre - half)
    high = 1.0 if hits == n else min(1.0, centre + half)
    return Share(p, low, high, n, hits)


def mean(first: Share, second: Share) -> Share:
    """The mean of two shares, its interval the mean of their intervals' ends."""
    if not (first.measured and second.measured):
        return NOTHING
    return Share(
        (first.value + second.value) / 2,
        (first.low + second.low) / 2,
        (first.high + second.high) / 2,
        first.n + second.n,
    )


# What the pages derived from the development store share: its rows in, a page out.
Outcome = dict[str, Any]


def run_of(
    rows: Sequence[Outcome], model: str, half: str, system: str, tag: str
) -> dict[str, Outcome]:
    """One run's outcomes by question (`tag` "*": whatever its tag)."""
    return {
        r["question"]: r
        for r in rows
        if (r["model"], r["half"], r["system"]) == (model, half, system)
        and (tag == "*" or str(r.get("tag")) == tag)
    }


def balanced(
    outcomes: Sequence[Outcome], right: Callable[[Outcome], bool] = lambda o: bool(o["right"])
) -> tuple[Share, Share, Share]:
    """Right calls pooled, right abstentions on live_irrelevance, and their mean."""
    calls = [right(o) for o in outcomes if o["category"] != "live_irrelevance"]
    irrelevance = [right(o) for o in outcomes if o["category"] == "live_irrelevance"]
    pooled, abstained = wilson(sum(calls), len(calls)), wilson(sum(irrelevance), len(irrelevance))
    return pooled, abstained, mean(pooled, abstained)


def cell(share: Share) -> str:
    """A share in points with its interval: `62.6 (52.7–69.4)`."""
    return f"{100 * share.value:.1f} ({100 * share.low:.1f}–{100 * share.high:.1f})"
