"""What each rule of the engine measured on the development benchmark.

The gain is the engine's balanced score (the mean of right calls and right abstentions,
in points) with the rule on, minus the score with it off, on the same questions, with a
95 % paired-bootstrap interval (`python -m bench.bfcl.ablation`; the table is
`bench/results/bfcl-ablation.md`, and a test holds these figures to it; an opt-in rule,
which leaves no trace where it is off, is measured by asking every question with it on,
`python -m bench.bfcl.opt_in`, page `bench/results/bfcl-opt-in.md`). A heuristic is
on by default only when its interval lies wholly above zero on one model or pooled over
both ("pooled": the mean of the two models' gains); a guard stays on whatever it scores
(`rules.GUARDS`). The figures are Qwen2.5-Coder-0.5B's and SmolLM2-135M's on the
validation half, each model's newest run of the rule: Qwen in the typed format (engine
`stop23`, 255 questions) for the rules that act there, in json (`stop14`) for the
others; SmolLM2 in json (`stop16`, 176 questions; `stop15`, 84, for the rules not run
on it).
"""

from __future__ import annotations

from attrs import frozen

from parlay.engine.checks.rules import RULES


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

    def __str__(self) -> str:
        return (
            f"{self.model}, {self.half} half: {self.points:+.1f} points "
            f"({self.low:+.1f} to {self.high:+.1f}), acted on {self.acted_on} "
            f"of {self.questions} questions"
        )


Figures = tuple[int, int, float, float, float]  # questions, acted on, points, low, high


def _validate(qwen: Figures, smollm2: Figures, pooled: Figures) -> tuple[Gain, ...]:
    """One rule's gains on the validation half: each model's, and pooled ("pooled": the
    mean of the two models' gains, each model's questions resampled on their own)."""
    by_model = {"qwen": qwen, "smollm2": smollm2, "pooled": pooled}
    return tuple(Gain(model, "validate", *figures) for model, figures in by_model.items())


MEASURED: dict[str, tuple[Gain, ...]] = {
    "forced_call": _validate(
        qwen=(255, 10, 2.8, -1.0, 7.8),
        smollm2=(176, 41, 2.6, -1.7, 9.0),
        pooled=(431, 51, 2.7, -0.3, 6.5),
    ),
    "example_value": _validate(
        qwen=(255, 14, 2.5, 0.0, 6.2),
        smollm2=(176, 27, 0.0, 0.0, 0.0),
        pooled=(431, 41, 1.3, 0.0, 3.1),
    ),
    "invented_value": _validate(
        qwen=(255, 22, 6.5, 1.5, 12.3),
        smollm2=(176, 10, 8.0, 2.0, 16.0),
        pooled=(431, 32, 7.3, 3.1, 12.3),
    ),
    "same_value": _validate(
        qwen=(255, 0, 0.0, 0.0, 0.0),
        smollm2=(84, 3, 0.0, 0.0, 0.0),
        pooled=(339, 3, 0.0, 0.0, 0.0),
    ),
    "pretended_call": _validate(
        qwen=(255, 3, 0.0, 0.0, 0.0),
        smollm2=(176, 14, 0.0, 0.0, 0.0),
        pooled=(431, 17, 0.0, 0.0, 0.0),
    ),
    "example_answer": _validate(
        qwen=(255, 1, 0.0, 0.0, 0.0),
        smollm2=(176, 4, 0.0, 0.0, 0.0),
        pooled=(431, 5, 0.0, 0.0, 0.0),
    ),
    "refusal": _validate(
        qwen=(255, 0, 0.0, 0.0, 0.0),
        smollm2=(84, 0, 0.0, 0.0, 0.0),
        pooled=(339, 0, 0.0, 0.0, 0.0),
    ),
    "missed_tool": _validate(
        qwen=(255, 22, -0.8, -3.5, 1.0),
        smollm2=(84, 10, 0.0, 0.0, 0.0),
        pooled=(339, 32, -0.4, -1.9, 0.5),
    ),
    "words_fallback": _validate(
        qwen=(255, 33, 16.3, 9.3, 24.3),
        smollm2=(176, 50, 19.0, 9.3, 29.0),
        pooled=(431, 83, 17.6, 11.6, 23.7),
    ),
    "kept_insisted_value": _validate(
        qwen=(255, 3, 0.5, 0.0, 1.2),
        smollm2=(84, 0, 0.0, 0.0, 0.0),
        pooled=(339, 3, 0.2, 0.0, 0.6),
    ),
    # Opt-in for its cost (one more generation for every single call it looks at), and
    # within its interval on balance: +11.9 points on the 59 questions asking for several
    # calls, -3.4 on the 149 single ones (bench/results/bfcl-opt-in.md).
    "recount_calls": (Gain("qwen", "validate", 255, 45, 0.7, -0.7, 2.2),),
    # Opt-in for what it costs any model (`rules.OPT_IN`), not for its score: asked with it
    # on where it could act (bench/bfcl/switched_on.py), the same gain on each half. With
    # the language gate (stop 29) the pair with leaned_to_words gained the same again.
    "unrelated_call": (
        Gain("qwen", "tune", 251, 9, 3.7, 0.0, 8.7),
        Gain("qwen", "validate", 255, 9, 3.7, 0.0, 8.7),
        Gain("smollm2", "tune", 176, 14, 4.0, 0.0, 10.0),
        Gain("smollm2", "validate", 176, 9, 2.3, 0.0, 6.7),
    ),
    # Opt-in: the same gain on each half, within its interval on both (asked with it on
    # where it could act, bench/bfcl/switched_on.py; typed format only, so Qwen only).
    "leaned_to_words": (
        Gain("qwen", "tune", 251, 15, 3.0, -0.5, 7.5),
        Gain("qwen", "validate", 255, 17, 3.0, -0.7, 7.5),
    ),
    "first_answer_stands": _validate(
        qwen=(255, 1, -0.2, -0.7, 0.0),
        smollm2=(84, 0, 0.0, 0.0, 0.0),
        pooled=(339, 1, -0.1, -0.4, 0.0),
    ),
}


def describe(name: str) -> str:
    """What the rule catches, and what it measured."""
    gains = MEASURED.get(name, ())
    measured = "; ".join(str(g) for g in gains) if gains else "not measured"
    return f"{name}: {RULES[name]}. Measured: {measured}."
