"""The knob that trades calls for abstentions, over thresholds: `python -m bench.bfcl.knob`.

`PromptedBackend(min_call_confidence=c)` asks a first reply that calls, under `auto`, for
an answer in words when the model put more than `1 - c` of its weight on answering
(`Diagnostics.answer_share`, stored with every outcome of the development benchmark).
Such a reply then comes under the answer-only grammar and makes no call, so its outcome
under any threshold follows from the stored one, without asking the model again: a
question whose first reply called with an answer share at or above the threshold
becomes an abstention (right on live_irrelevance, wrong elsewhere); every other question
keeps its outcome. The page shows, for the engine as stored with the knob off, each
threshold's balanced score on both halves of both models, and the rule that picks the
default from the tune halves alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table
from bench.bfcl.pages import balanced, cell, page_main, run_of
from bench.bfcl.stats import Share

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-dev.jsonl"
PAGE = RESULTS / "bfcl-knob.md"
# The stored runs with the knob off: the engine each model ships with (SmolLM2 embedded,
# json format; Qwen behind `parlay serve`, typed format), before the knob existed.
RUNS = {"smollm2": ("parlay", "stop16"), "qwen": ("parlay:typed", "stop23")}
THRESHOLDS = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
Outcome = dict[str, Any]


def stored(rows: Sequence[Outcome], model: str, half: str) -> list[Outcome]:
    return list(run_of(rows, model, half, *RUNS[model]).values())


def right_under(outcome: Outcome, threshold: float | None) -> bool:
    """The outcome's rightness with the knob at `threshold` (answer share; None: off)."""
    share = outcome.get("answer_share")
    asked_for_words = (
        threshold is not None
        and share is not None
        and share >= threshold
        and not outcome["abstained"]
    )
    if asked_for_words:
        return outcome["category"] == "live_irrelevance"
    return bool(outcome["right"])


def scores(outcomes: Sequence[Outcome], threshold: float | None) -> tuple[Share, Share, Share]:
    """Calls pooled, live_irrelevance, and their mean (balanced), with intervals."""
    return balanced(outcomes, lambda outcome: right_under(outcome, threshold))


def best(outcomes: Sequence[Outcome]) -> float:
    """The rule: the threshold with the best balanced score (ties: the lower threshold,
    which takes fewer calls)."""
    return max(THRESHOLDS, key=lambda t: (scores(outcomes, t)[2].value, -t))


def section(model: str, halves: dict[str, list[Outcome]]) -> list[str]:
    rows = []
    for threshold in (None, *THRESHOLDS):
        row = ["off" if threshold is None else f"{1 - threshold:.2f}"]
        for half in ("tune", "validate"):
            calls, irrelevance, score = scores(halves[half], threshold)
            row += [cell(score), f"{100 * calls.value:.1f}", f"{100 * irrelevance.value:.1f}"]
        rows.append(row)
    header = ["min_call_confidence"] + [
        f"{half} {what}" for half in ("tune", "validate")
        for what in ("balanced (95 %)", "calls right", "irrelevance right")
    ]  # fmt: skip
    chosen = best(halves["tune"])
    n = {half: len(found) for half, found in halves.items()}
    return [
        f"## {model} ({RUNS[model][0]}, {RUNS[model][1]}; tune n={n['tune']}, "
        f"validate n={n['validate']})",
        "",
        markdown_table(header, rows),
        "",
        f"Best on the tune half: min_call_confidence {1 - chosen:.2f}; on the validate half "
        f"it scores {cell(scores(halves['validate'], chosen)[2])}.",
        "",
    ]


def render(rows: Sequence[Outcome]) -> str:
    lines = [
        "# The knob: calls against abstentions, by threshold",
        "",
        "Made by `python -m bench.bfcl.knob` from `bench/results/bfcl-dev.jsonl` (see its",
        "docstring: derived from the stored first replies, not asked again). Balanced: the",
        "mean of right calls pooled over the call categories and right abstentions on",
        "live_irrelevance; a system that never calls scores 50.",
        "",
    ]
    for model in RUNS:
        halves = {half: stored(rows, model, half) for half in ("tune", "validate")}
        if all(halves.values()):
            lines += section(model, halves)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    page_main(render, (__doc__ or "").splitlines()[0], STORE, PAGE, argv)


if __name__ == "__main__":
    main()
