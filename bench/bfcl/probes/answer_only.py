"""What the answer-only retry writes, before and after a change to what it is shown.

    python -m bench.bfcl.probes.answer_only questions HALF MODEL > ids.txt
    python -m bench.bfcl.probes.answer_only report TAG BASE [HALF MODEL ...]

The retry held to the answer-only grammar (`words_fallback`) cannot call, so a change
to its prompt cannot move a question's score: it moves what the user reads. `questions`
lists the questions whose shipped outcome (`BASE_TAG`) went through that retry, to ask
again with `bench.bfcl.dev --questions ids.txt --tag TAG`, with the change and (tag BASE)
from the commit before it, in the same session: the shipped outcomes come from an older
engine, whose repetition guard, for one, noted fewer loops. `report` pairs the two runs
on them: replies the echo filter dropped (a stand-in or a retry message copied as the
answer), turns that ended with no text, the generations spent, replies stopped in a
loop, the seconds, and every question whose right/abstained changed (none should).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from bench.bfcl.dev import STORE
from bench.bfcl.store import Key, Store, by_question

Outcomes = dict[Key, dict[str, Any]]

BASE_TAG = "stop16"
SYSTEM = "parlay"


def _rows(stored: Outcomes, tag: str, half: str, model: str) -> dict[str, dict[str, Any]]:
    """The shipped engine's real (not derived) outcomes under `tag`, by question."""
    return by_question(stored, model, half, SYSTEM, tag, real_only=True)


def _rules(row: dict[str, Any]) -> list[str]:
    return row.get("rules") or []


def fell_back(row: dict[str, Any]) -> bool:
    return "words_fallback" in _rules(row)


def questions(stored: Outcomes, half: str, model: str) -> list[str]:
    """The questions whose shipped outcome went through the answer-only retry."""
    rows = _rows(stored, BASE_TAG, half, model)
    return sorted(q for q, row in rows.items() if fell_back(row))


def summary(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Counts over `rows`: echo-filtered replies, empty turns, generations, loops and seconds."""
    rows = list(rows)
    dropped = [r for r in rows if "words_after_drop" in _rules(r)]
    return {
        "turns": len(rows),
        "a reply dropped as an echo": sum("echo_filter" in _rules(r) for r in rows),
        "asked again in words after a drop": len(dropped),
        "ended with no text": sum(
            not (r.get("text") or "").strip() and not r["calls"] for r in rows
        ),
        "generations": sum(1 + len(r.get("retries") or []) for r in rows) + len(dropped),
        # Not tokens: a reply stopped in a loop has no count, and leaves its turn uncounted.
        "a reply stopped in a loop": sum(
            any(note.startswith("stopped a reply in a loop") for note in r.get("notes") or [])
            for r in rows
        ),
        "seconds": round(sum(r.get("seconds") or 0.0 for r in rows)),
    }


def report(tag: str, base_tag: str, pairs: Sequence[tuple[str, str]]) -> None:
    print(f"# The answer-only retry: {tag} against {base_tag}\n")
    print(f"Made by `python -m bench.bfcl.probes.answer_only report {tag} {base_tag} ...`")
    print(f"from `bench/results/bfcl-dev.jsonl`: the questions whose {BASE_TAG} outcome")
    print("went through the retry held to the answer-only grammar, asked with each engine.\n")
    stored = Store(STORE).load()
    for half, model in pairs:
        listed = set(questions(stored, half, model))
        base, new = _rows(stored, base_tag, half, model), _rows(stored, tag, half, model)
        asked = sorted(q for q in new if q in base and q in listed)
        print(f"## {model}, {half} half: {len(asked)} questions asked again\n")
        before = summary(base[q] for q in asked)
        after = summary(new[q] for q in asked)
        print(f"| | {base_tag} | {tag} |\n| --- | --- | --- |")
        for label in before:
            print(f"| {label} | {before[label]:g} | {after[label]:g} |")
        moved = [
            q
            for q in asked
            if (base[q]["right"], base[q]["abstained"]) != (new[q]["right"], new[q]["abstained"])
        ]
        print(f"\nright or abstained changed: {len(moved)} {' '.join(moved)}\n")


def main(argv: Sequence[str]) -> None:
    if argv[:1] == ["questions"] and len(argv) == 3:
        print("\n".join(questions(Store(STORE).load(), argv[1], argv[2])))
    elif argv[:1] == ["report"] and len(argv) >= 5 and len(argv) % 2 == 1:
        report(argv[1], argv[2], list(zip(argv[3::2], argv[4::2], strict=True)))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
