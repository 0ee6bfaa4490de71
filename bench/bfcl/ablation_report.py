"""The ablation page: what each rule of the engine is worth, paired question by question.

For each model and half, the shipped engine (`parlay`, one tag) and the engine with one
rule off (`parlay:no-<rule>`) are compared on the same questions. The gain of a rule is
the shipped engine's balanced score minus the ablated one's (balanced: the mean of the
right share on the call categories and the abstentions on live_irrelevance, as on the
dev page), with a 95 % interval from a paired bootstrap over questions (2,000 resamples,
each stratum resampled on its own, seeded). A rule earns its place when the whole
interval is above zero; the guards (`parlay.engine.checks.rules.GUARDS`) stay on whatever
the score, because they keep a failure from reaching the user.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from attrs import frozen

from bench._table import markdown_table
from bench.bfcl.data import ABSTAIN_CATEGORIES, CALL_CATEGORIES, RELEVANCE_CATEGORIES
from parlay.engine.checks.rules import GUARDS, RULES

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
    return pooled_interval([(calls, abstain)])


def pooled_interval(groups: Sequence[tuple[Sequence[Pair], Sequence[Pair]]]) -> tuple[float, float]:
    """The 95 % paired bootstrap interval of the mean of the groups' gains (one group
    per model; every stratum of every group resampled on its own)."""
    rng = random.Random(0)

    def resampled(pairs: Sequence[Pair]) -> list[Pair]:
        return [rng.choice(pairs) for _ in pairs] if pairs else []

    gains = sorted(
        sum(gain(resampled(c), resampled(a)) for c, a in groups) / len(groups)
        for _ in range(RESAMPLES)
    )
    return gains[int(0.025 * RESAMPLES)], gains[int(0.975 * RESAMPLES) - 1]


def gain_cell(points: float, low: float, high: float) -> str:
    """A gain in points with its interval (bounds as shares): `+3.7 (+0.0 to +8.7)`."""
    return f"{points:+.1f} ({100 * low:+.1f} to {100 * high:+.1f})"


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


@frozen
class RulePairs:
    """One rule's questions, paired (shipped right, ablated right), by what they score."""

    calls: list[Pair]
    abstain: list[Pair]
    # live_relevance (right: any call), the other side of live_irrelevance: not in the
    # balanced score, as on the dev page, so shown in a column of its own.
    relevance: list[Pair]
    questions: int
    acted: int


def rule_pairs(shipped: Mapping[str, Outcome], off: Mapping[str, Outcome]) -> RulePairs:
    both = [q for q in off if q in shipped]

    def pairs(categories: Collection[str]) -> list[Pair]:
        return [
            (shipped[q]["right"], off[q]["right"]) for q in both if off[q]["category"] in categories
        ]

    acted = sum(not off[q].get("derived") for q in both)
    return RulePairs(
        pairs(CALL_CATEGORIES),
        pairs(ABSTAIN_CATEGORIES),
        pairs(RELEVANCE_CATEGORIES),
        len(both),
        acted,
    )


def kept_lost(pairs: Sequence[Pair]) -> str:
    return f"{sum(s and not o for s, o in pairs)} / {sum(o and not s for s, o in pairs)}"


RULE_HEADER = ["rule", "questions", "acted on", "right kept / lost by it",
               "live_relevance kept / lost", "gain, points (95 %)", "verdict"]  # fmt: skip


def rule_row(rule: str, shipped: Mapping[str, Outcome], off: Mapping[str, Outcome]) -> list[object]:
    """A row of `RULE_HEADER`: the rule's gain on its pairs (rule on, rule off)."""
    got = rule_pairs(shipped, off)
    calls, abstain = got.calls, got.abstain
    low, high = interval(calls, abstain) if calls or abstain else (0.0, 0.0)
    return [
        rule,
        str(got.questions),
        str(got.acted),
        kept_lost([*calls, *abstain]),
        kept_lost(got.relevance),
        gain_cell(100 * gain(calls, abstain), low, high),
        verdict(rule, got.acted, low, high),
    ]


BySystem = dict[str, dict[str, Outcome]]


def by_system(outcomes: Sequence[Outcome]) -> BySystem:
    out: BySystem = defaultdict(dict)
    for o in outcomes:
        out[o["system"]][o["question"]] = o
    return out


def ablated_rules(systems: BySystem) -> list[str]:
    return sorted(
        (name.removeprefix("parlay:no-") for name in systems if name.startswith("parlay:no-")),
        key=lambda rule: (list(RULES).index(rule) if rule in RULES else len(RULES), rule),
    )


def newest_pairs(by_tag: Sequence[BySystem]) -> dict[str, RulePairs]:
    """Each rule's pairs from the newest engine (of `by_tag`, oldest first) it was run on."""
    out: dict[str, RulePairs] = {}
    for systems in by_tag:
        for rule in ablated_rules(systems):
            out[rule] = rule_pairs(systems.get("parlay", {}), systems[f"parlay:no-{rule}"])
    return out


def pooled_section(groups: Sequence[Mapping[str, RulePairs]]) -> list[str]:
    """Each rule's gain as the mean of the models' gains, for the rules every model ran
    (each model's newest run of the rule)."""
    rules = [r for r in groups[0] if all(r in g for g in groups)]
    rows: list[list[object]] = []
    for rule in rules:
        got = [g[rule] for g in groups]
        strata = [(p.calls, p.abstain) for p in got]
        points = 100 * sum(gain(c, a) for c, a in strata) / len(strata)
        low, high = pooled_interval(strata)
        acted = sum(p.acted for p in got)
        rows.append(
            [
                rule,
                " + ".join(str(p.questions) for p in got),
                str(acted),
                gain_cell(points, low, high),
                verdict(rule, acted, low, high),
            ]
        )
    header = ["rule", "questions", "acted on", "gain, mean of the models (95 %)", "verdict"]
    return [markdown_table(header, rows)]


def section(outcomes: Sequence[Outcome]) -> list[str]:
    systems = by_system(outcomes)
    shipped = systems.get("parlay", {})
    rows = [rule_row(r, shipped, systems[f"parlay:no-{r}"]) for r in ablated_rules(systems)]
    lines = [markdown_table(RULE_HEADER, rows)]
    if again := systems.get("parlay:again", {}):
        same = sum(
            (o["calls"], o["text"]) == (shipped[q]["calls"], shipped[q]["text"])
            for q, o in again.items()
            if q in shipped
        )
        lines.append(
            f"\nAsked again of the shipped engine: {same} of {len(again)} replies the same "
            "(the shortcut for the questions a rule did not act on rests on it)."
        )
    return lines


def render_ablation(outcomes: Sequence[Outcome], tag: str) -> str:
    """The page. `tag` names the engines, comma-separated and oldest first: each model and
    half gets a section per engine it was run on, and the pooled rows take each model's
    newest run of a rule (a rule measured on an older engine keeps that measure)."""
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
        "the others are the shipped engine's outcome (the rule cannot change them). A "
        "model run on several engines has a section for each, oldest first.",
        *since_measured(outcomes),
    ]
    chosen: dict[str, list[dict[str, RulePairs]]] = defaultdict(list)
    for (model, half), by_tag in sorted(groups.items()):
        # An engine no rule was switched off on (its outcomes are in the dev store for
        # other pages) has nothing to show here.
        systems = {t: by_system(by_tag[t]) for t in sorted(by_tag, key=order.__getitem__)}
        tags = [t for t, ran in systems.items() if ablated_rules(ran)]
        for name in tags:
            parts += ["", f"## {model}, {half} half (engine `{name}`)", "", *section(by_tag[name])]
        if tags:
            chosen[half].append(newest_pairs([systems[name] for name in tags]))
    for half, models in sorted(chosen.items()):
        if len(models) > 1:
            parts += ["", f"## Pooled over the models, {half} half", "", POOLED, ""]
            parts += pooled_section(models)
    return "\n".join(parts) + "\n"


def since_measured(outcomes: Sequence[Outcome]) -> list[str]:
    """A line naming the rules measured here that the engine has dropped since, and the
    engine's rules never switched off here: the page is a record of older engines."""
    ran = {rule for name in ablated_rules(by_system(outcomes)) for rule in name.split("+")}
    gone, unmeasured = sorted(ran - set(RULES)), [r for r in RULES if r not in ran]
    dropped, never = (", ".join(f"`{r}`" for r in rules) or "none" for rules in (gone, unmeasured))
    line = f"Since these runs the engine has dropped {dropped}; its rules never switched off here: "
    return ["", f"{line}{never}."] if gone or unmeasured else []


POOLED = (
    "A rule's gain as the mean of its gains on each model (each model's questions resampled "
    "on their own; each model's newest run of the rule): a rule that helps every model a "
    "little can earn its place here while no single model's questions are enough to show it."
)
