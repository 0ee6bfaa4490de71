"""What an "unrelated call" rule would change in stored outcomes (derived, not measured).

    python -m bench.bfcl.probes.unrelated HALF MODEL SYSTEM[,SYSTEM...]
    python -m bench.bfcl.probes.unrelated answers   # against BFCL's right answers

The rule (`unrelated_call`, `bench.bfcl.switched_on.unrelated_judged`): under
`tool_choice` auto, a reply whose every call goes to a tool sharing no word with the
user's messages is asked again under the answer-only grammar, which cannot call: the
bench scores it as an abstention. So scoring the stored reply as no call is what the
rule gives when it judges the released reply; where an earlier attempt of a retried
turn was judged instead, only asking again tells (`bench.bfcl.dev`, `parlay:unrelated`).
"""

from __future__ import annotations

import collections
import sys
from typing import Any

from bench.bfcl.checker import check
from bench.bfcl.data import (
    ABSTAIN_CATEGORIES,
    CALL_CATEGORIES,
    DEV_CATEGORIES,
    PARALLEL_CATEGORIES,
    RELEVANCE_CATEGORIES,
    SINGLE_CALL_CATEGORIES,
    Question,
)
from bench.bfcl.dev import STORE
from bench.bfcl.split import select
from bench.bfcl.stats import wilson
from bench.bfcl.store import Store, by_question
from bench.bfcl.switched_on import unrelated_judged
from parlay.engine.checks.relevance import unrelated_tools

TAG = "stop16"


def _rows(half: str, model: str, system: str) -> dict[str, dict[str, Any]]:
    """`system`'s stored outcomes of one model and half, by question."""
    return by_question(Store(STORE).load(), model, half, system, TAG)


def _rescore(question: Question, row: dict[str, Any]) -> tuple[bool, bool]:
    """(right, judged) with the rule applied to the stored reply: a judged reply is asked
    again under the answer-only grammar, so it makes no call."""
    if not unrelated_judged(question, row):
        return row["right"], False
    verdict = check(question.category, question.functions, [], question.ground_truth)
    return verdict.valid, True


def _share(hits: int, n: int) -> str:
    share = wilson(hits, n)
    return f"{hits}/{n} = {share.value:.0%} ({share.low:.0%}–{share.high:.0%})"


def report(half: str, model: str, system: str) -> None:
    questions = {q.id: q for c in DEV_CATEGORIES for q in select(c, half, None)}  # type: ignore[arg-type]
    rows = _rows(half, model, system)
    before: dict[str, list[bool]] = collections.defaultdict(list)
    after: dict[str, list[bool]] = collections.defaultdict(list)
    flips = collections.Counter[str]()
    for qid, row in sorted(rows.items()):
        question = questions.get(qid)
        if question is None:
            continue
        right, judged = _rescore(question, row)
        before[question.category].append(row["right"])
        after[question.category].append(right)
        if judged:
            flips[f"{question.category}: {row['right']:d}->{right:d}"] += 1
    print(f"## {model} / {system}, {half} half")
    groups = {
        "single-call pooled": SINGLE_CALL_CATEGORIES,
        "parallel pooled": PARALLEL_CATEGORIES,
        "calls pooled": CALL_CATEGORIES,
        "live_irrelevance": ABSTAIN_CATEGORIES,
        "live_relevance": RELEVANCE_CATEGORIES,
    }
    balanced = []
    for label, categories in groups.items():
        b = [x for c in categories for x in before[c]]
        a = [x for c in categories for x in after[c]]
        print(f"{label:20} {_share(sum(b), len(b)):28} -> {_share(sum(a), len(a))}")
        if label in ("calls pooled", "live_irrelevance"):
            balanced.append((sum(b) / max(len(b), 1), sum(a) / max(len(a), 1)))
    print(
        f"{'balanced':20} {100 * (balanced[0][0] + balanced[1][0]) / 2:.1f}"
        f" -> {100 * (balanced[0][1] + balanced[1][1]) / 2:.1f}"
    )
    for flip, count in sorted(flips.items()):
        print(f"  changed {flip}: {count}")


def against_the_answers() -> None:
    """What the rule costs a model that always calls the right tool: the call questions
    of both halves (every question, not the bench's sample) whose right tools all share
    no word with the request."""
    judged = total = 0
    for half in ("tune", "validate"):
        for category in (*CALL_CATEGORIES, *RELEVANCE_CATEGORIES):
            n = hit = 0
            for question in select(category, half, None):
                names = [next(iter(answer)) for answer in question.ground_truth]
                if not names:
                    continue
                unrelated = unrelated_tools(question.messages, question.offered_tools)
                n += 1
                hit += all(name in unrelated for name in names)
            print(f"{half:9} {category:24} {hit}/{n}")
            judged, total = judged + hit, total + n
    print(f"right tools judged unrelated: {judged} of {total} questions")


def main() -> None:
    if sys.argv[1:] == ["answers"]:
        against_the_answers()
        return
    half, model, systems = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    for system in systems:
        report(half, model, system)


if __name__ == "__main__":
    main()
