"""The ablation page: what each rule of the engine is worth, paired question by question.

For each model and half, the shipped engine (`parlay`, one tag) and the engine with one
rule off (`parlay:no-<rule>`) are compared on the same questions. The gain of a rule is
the shipped engine's balanced score minus the ablated one's (balanced: the mean of the
right share on the call categories and the abstentions on live_irrelevance, as on the
dev page), with a 95 % interval from a paired bootstrap over questions (2,000 resamples,
each stratum resampled on its own, seeded). A rule earns its place when the whole
interval is above zero; the guards (`parlay.contract.rules.GUARDS`) stay on whatever
the score, because they keep a failure from reaching the user.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from bench._table import markdown_table
from bench.bfcl.data import ABSTAIN_CATEGORIES, CALL_CATEGORIES
from parlay.contract.rules import GUARDS, RULES

Outcome = Mapping[str, Any]
Pair = tuple[bool, bool]  # (shipped right, ablated right)
RESAMPLES = 2000


def balanced(calls: Sequence[Pair], abstain: Sequence[Pair], side: int) -> float:
    shares = [sum(p[side] for p in group) / len(group) for group in (calls, abstain) if group]
    return sum(shares) / len(shares) if shares else 0.0


def gain(calls: Sequence[Pair], abstain: Sequence[Pair]) -> float:
    return balanced(calls, abstain, 0) - balanced(calls, abstain, 1)


def interval(calls: Sequence[Pair], abstain: Sequence[Pair]) -> tuple[float, float]:
    """The 95 % paired bootstrap interval of `gain`."""
    rng = random.Random(0)
    gains = sorted(
        gain(
            [rng.choice(calls) for _ in calls] if calls else [],
            [rng.choice(abstain) for _ in abstain] if abstain else [],
        )
        for _ in range(RESAMPLES)
    )
    return gains[int(0.025 * RESAMPLES)], gains[int(0.975 * RESAMPLES) - 1]


def same_reply(a: Outcome, b: Outcome) -> bool:
    return a["calls"] == b["calls"] and a["text"] == b["text"]


def verdict(rule: str, acted: int, low: float, high: float) -> str:
    if rule in GUARDS:
        return "guard: on"
    if not acted:
        return "did not act"
    if low > 0:
        return "earns its place"
    if high < 0:
        return "costs: off"
    return "within the interval"


def rule_row(rule: str, shipped: Mapping[str, Outcome], off: Mapping[str, Outcome]) -> list[object]:
    both = [q for q in off if q in shipped]
    calls = [
        (shipped[q]["right"], off[q]["right"])
        for q in both
        if off[q]["category"] in CALL_CATEGORIES
    ]
    abstain = [
        (shipped[q]["right"], off[q]["right"])
        for q in both
        if off[q]["category"] in ABSTAIN_CATEGORIES
    ]
    acted = sum(not off[q].get("derived") for q in both)
    won = sum(s and not o for s, o in calls + abstain)
    lost = sum(o and not s for s, o in calls + abstain)
    low, high = interval(calls, abstain) if calls or abstain else (0.0, 0.0)
    points = 100 * gain(calls, abstain)
    return [
        rule,
        str(len(both)),
        str(acted),
        f"{won} / {lost}",
        f"{points:+.1f} ({100 * low:+.1f} to {100 * high:+.1f})",
        verdict(rule, acted, low, high),
    ]


def section(outcomes: Sequence[Outcome]) -> list[str]:
    by_system: dict[str, dict[str, Outcome]] = defaultdict(dict)
    for o in outcomes:
        by_system[o["system"]][o["question"]] = o
    shipped = by_system.get("parlay", {})
    ablated = sorted(
        (name.removeprefix("parlay:no-") for name in by_system if name.startswith("parlay:no-")),
        key=lambda rule: (list(RULES).index(rule) if rule in RULES else len(RULES), rule),
    )
    rows: list[list[object]] = [
        rule_row(rule, shipped, by_system[f"parlay:no-{rule}"]) for rule in ablated
    ]
    lines = [
        markdown_table(
            [
                "rule",
                "questions",
                "acted on",
                "right kept / lost by it",
                "gain, points (95 %)",
                "verdict",
            ],
            rows,
        )
    ]
    again = by_system.get("parlay:again", {})
    if again:
        same = sum(same_reply(o, shipped[q]) for q, o in again.items() if q in shipped)
        lines.append(
            f"\nAsked again of the shipped engine: {same} of {len(again)} replies the same "
            "(the shortcut for the questions a rule did not act on rests on it)."
        )
    return lines


def render_ablation(outcomes: Sequence[Outcome], tag: str) -> str:
    """The page. `tag` names the engine; several, comma-separated and oldest first, show
    each model and half on the newest of them it was run on."""
    order = {name: rank for rank, name in enumerate(tag.split(","))}
    groups: dict[tuple[str, str], dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        if o.get("tag") in order:
            groups[o["model"], o["half"]][o["tag"]].append(o)
    parts = [
        "# The engine's rules, one switched off at a time",
        "",
        (__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
        f"Made by `python -m bench.bfcl.ablation` (engine tags `{tag}`); rules not listed "
        "were not run. 'acted on': the questions the rule acted on, asked again without it; "
        "the others are the shipped engine's outcome (the rule cannot change them).",
    ]
    for (model, half), by_tag in sorted(groups.items()):
        newest = max(by_tag, key=order.__getitem__)
        parts += ["", f"## {model}, {half} half (engine `{newest}`)", "", *section(by_tag[newest])]
    return "\n".join(parts) + "\n"
