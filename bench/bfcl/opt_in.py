"""The opt-in rules and formats, each asked switched on: `python -m bench.bfcl.opt_in`.

A rule that is off leaves no trace of where it would have acted, so the ablation's
shortcut (ask again only where the rule acted) cannot measure it. Such a rule is a
variant of the development benchmark instead (`bench.bfcl.systems.VARIANTS`), asked the
questions beside the shipped engine (or the engine it adds the rule to, `BASES`), and
this page pairs the two question by question
with the ablation page's gain and interval (`bench.bfcl.ablation_report`): the balanced
score with the rule on minus the shipped engine's.

Where a rule cannot change right or wrong, the variant need not be asked: its outcome is
the shipped engine's (`UNCHANGED`). `recount_calls` only acts on a reply that already
makes one call, so on live_irrelevance (right: no call) and live_relevance (right: any
call) it changes nothing.

An opt-in format (`action_format=typed`) is paired the same way; it leaves no rule's name
on a reply, so its "acted on" counts the questions whose reply differs from the shipped
engine's.

    python -m bench.bfcl.opt_in   # bench/results/bfcl-opt-in.md from the dev store
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table
from bench.bfcl.ablation_report import RULE_HEADER, Outcome, row_cells, same_reply
from bench.bfcl.data import ABSTAIN_CATEGORIES, CALL_CATEGORIES, RELEVANCE_CATEGORIES
from bench.bfcl.dev import current
from bench.bfcl.store import Store

# The variant that switches each opt-in rule or format on.
VARIANTS = {
    "recount_calls": "parlay:recount",
    "unrelated_call": "parlay:unrelated",
    "action_format=typed": "parlay:typed",
    "action_format=typed+unrelated_call": "parlay:typed+unrelated",
    "leaned_to_words": "parlay:typed+leaned",
    "leaned_to_words+unrelated_call": "parlay:typed+leaned+unrelated",
}
# The engine a variant adds its rules to, when not the shipped one: `leaned_to_words`
# acts in the typed format only, and is paired with it.
BASES = {
    "leaned_to_words": "parlay:typed",
    "leaned_to_words+unrelated_call": "parlay:typed",
}
FORMATS = frozenset({"action_format=typed", "action_format=typed+unrelated_call"})
UNCHANGED = {"recount_calls": ABSTAIN_CATEGORIES + RELEVANCE_CATEGORIES}
RESULTS = Path(__file__).parents[2] / "bench" / "results"

Paired = dict[str, tuple[Outcome, Outcome]]  # question -> (rule on, shipped)


def by_question(outcomes: Sequence[Outcome], system: str) -> dict[str, Outcome]:
    return {o["question"]: o for o in outcomes if o["system"] == system}


def paired(rule: str, on: Mapping[str, Outcome], shipped: Mapping[str, Outcome]) -> Paired:
    pairs = {q: (on[q], shipped[q]) for q in on if q in shipped}
    for q, o in shipped.items():
        if q not in pairs and o["category"] in UNCHANGED.get(rule, ()):
            pairs[q] = (o, o)
    return pairs


def rule_row(rule: str, pairs: Paired) -> list[object]:
    def right(categories: Sequence[str]) -> list[tuple[bool, bool]]:
        return [(a["right"], b["right"]) for a, b in pairs.values() if a["category"] in categories]

    if rule in FORMATS:
        acted = sum(not same_reply(a, b) for a, b in pairs.values())
    else:
        names = rule.split("+")  # a variant switching several rules on: any of them
        acted = sum(any(n in (a.get("rules") or ()) for n in names) for a, _ in pairs.values())
    return row_cells(
        rule,
        len(pairs),
        acted,
        right(CALL_CATEGORIES),
        right(ABSTAIN_CATEGORIES),
        right(RELEVANCE_CATEGORIES),
    )


def render(outcomes: Sequence[dict[str, Any]], tags: Sequence[str]) -> str:
    lines = [
        "# Opt-in rules and formats, asked switched on",
        "",
        "Made by `python -m bench.bfcl.opt_in` from `bench/results/bfcl-dev.jsonl` (engine "
        f"tags {', '.join(tags)}, the newest complete run per system). Each opt-in rule or format is a variant",
        "of the development benchmark, paired question by question with the shipped engine:",
        "gain is the balanced score with the rule on minus the shipped one, 95 % paired",
        "bootstrap (as on bfcl-ablation.md). Categories where the rule cannot change right or",
        "wrong take the shipped engine's outcome (see the module's docstring).",
    ]
    newest = current(outcomes, ",".join(tags))  # each question's newest outcome
    for model in sorted({o["model"] for o in newest}):
        for half in ("tune", "validate"):
            mine = [o for o in newest if o["model"] == model and o["half"] == half]
            rows = [
                rule_row(
                    rule,
                    paired(
                        rule,
                        by_question(mine, system),
                        by_question(mine, BASES.get(rule, "parlay")),
                    ),
                )
                for rule, system in VARIANTS.items()
                if any(o["system"] == system for o in mine)
            ]
            if rows:
                lines += ["", f"## {model}, {half} half", "", markdown_table(RULE_HEADER, rows)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=RESULTS / "bfcl-dev.jsonl")
    parser.add_argument("--page", type=Path, default=RESULTS / "bfcl-opt-in.md")
    parser.add_argument("--tag", default="stop16-derived,stop16", help="oldest first")
    args = parser.parse_args(argv)
    text = render(list(Store(args.store).load().values()), args.tag.split(","))
    args.page.write_text(text)
    print(text)
    print(f"page: {args.page}", file=sys.stderr)


if __name__ == "__main__":
    main()
