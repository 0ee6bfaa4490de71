"""What the `duplicate_calls` rule would have changed in stored `parlay:typed` outcomes.

    python -m bench.bfcl.probes.derived_duplicates CATEGORY[,CATEGORY...]

Derived, not measured: each stored reply with a call repeated word for word is scored
again with the repeats dropped. Under greedy decoding that is what the rule gives when
the repeat was in the released reply (retried replies are counted apart). Validate half,
Qwen, the questions every system answered.
"""

import collections
import json
import sys

from bench.bfcl.checker import check
from bench.bfcl.dev import STORE
from bench.bfcl.split import select
from bench.bfcl.store import Store


def main() -> None:
    categories = sys.argv[1].split(",")
    questions = {q.id: q for c in categories for q in select(c, "validate", None)}
    by: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    for row in Store(STORE).load().values():
        if row["model"] == "qwen" and row["half"] == "validate" and row["question"] in questions:
            by[row["system"]][row["question"]] = row
    common = set.intersection(*(set(rows) for rows in by.values()))
    changed = retried = right = 0
    for qid in sorted(common):
        row, question = by["parlay:typed"][qid], questions[qid]
        kept: dict[tuple[str, str], tuple[str, dict]] = {}
        for call in row["calls"]:
            key = (call["name"], json.dumps(call["arguments"], sort_keys=True))
            kept.setdefault(key, (call["name"], call["arguments"]))
        if len(kept) == len(row["calls"]):
            right += row["right"]
            continue
        changed += 1
        retried += bool(row["retries"])
        verdict = check(
            question.category, question.functions, list(kept.values()), question.ground_truth
        )
        right += verdict.valid
    print(f"{len(common)} questions; replies with a repeated call: {changed} ({retried} retried)")
    for system, rows in sorted(by.items()):
        print(f"{system:14} {sum(rows[q]['right'] for q in common)}")
    print(f"{'typed, derived':14} {right}")


if __name__ == "__main__":
    main()
