"""What the pages derived from the development store share: its rows in, a page out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bench.bfcl.stats import Share, mean, wilson

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
