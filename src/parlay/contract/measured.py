"""What each rule of the engine measured on the development benchmark.

The gain is the engine's balanced score (the mean of right calls and right abstentions,
in points) with the rule on, minus the score with it off, on the same questions, with a
95 % paired-bootstrap interval (`python -m bench.bfcl.ablation`; the table is
`bench/results/bfcl-ablation.md`, and a test holds these figures to it). A heuristic is
on by default only when some interval lies wholly above zero; a guard stays on whatever
it scores (`rules.GUARDS`).
"""

from __future__ import annotations

from attrs import frozen

from parlay.contract.rules import RULES


@frozen
class Gain:
    """One rule's measured gain on one model and half of the benchmark."""

    model: str
    half: str
    questions: int
    acted_on: int
    points: float
    low: float
    high: float

    @property
    def beyond_interval(self) -> bool:
        return self.low > 0

    def __str__(self) -> str:
        return (
            f"{self.model}, {self.half} half: {self.points:+.1f} points "
            f"({self.low:+.1f} to {self.high:+.1f}), acted on {self.acted_on} "
            f"of {self.questions} questions"
        )


def _qwen(questions: int, acted: int, points: float, low: float, high: float) -> Gain:
    return Gain("qwen", "validate", questions, acted, points, low, high)


def _smollm2(questions: int, acted: int, points: float, low: float, high: float) -> Gain:
    return Gain("smollm2", "validate", questions, acted, points, low, high)


MEASURED: dict[str, tuple[Gain, ...]] = {
    "forced_call": (_qwen(146, 4, 4.6, -0.8, 12.5),),
    "example_value": (_qwen(146, 1, 0.0, 0.0, 0.0),),
    "invented_value": (_qwen(146, 7, 1.2, -2.1, 7.1),),
    "same_value": (_qwen(146, 0, 0.0, 0.0, 0.0),),
    "pretended_call": (_qwen(146, 8, -1.2, -7.1, 2.5),),
    "example_answer": (_qwen(146, 1, 0.0, 0.0, 0.0),),
    "refusal": (_qwen(146, 0, 0.0, 0.0, 0.0),),
    "missed_tool": (_qwen(146, 12, 0.4, 0.0, 1.3),),
    "words_fallback": (_qwen(146, 7, 7.1, -0.4, 16.7),),
    "kept_insisted_value": (_qwen(146, 1, 0.4, 0.0, 1.3),),
    "first_answer_stands": (_qwen(146, 1, -0.4, -1.3, 0.0),),
}


def describe(name: str) -> str:
    """What the rule catches, and what it measured."""
    gains = MEASURED.get(name, ())
    measured = "; ".join(str(g) for g in gains) if gains else "not measured"
    return f"{name}: {RULES[name]}. Measured: {measured}."
