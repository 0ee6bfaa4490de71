"""Requirements checked and repaired, measured: the share of small tasks whose requirements
all hold at budget 1, 2 and 3 for each strategy, and what it cost (model requests,
seconds), on the embedded model.

    python -m bench.requirements            # every task, printed
    python -m bench.requirements --tasks 3  # a smoke run

Only code-checked requirements (lengths, words that must or must not appear, JSON
fields): a 135M judge would measure the judge, not the strategy. Still to come (issue
50): 30 tasks, a fact from a tool's result, Qwen2.5-Coder-0.5B, Mellea beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from parlay import GenerationOptions, start_session
from parlay.requirements import BestOfN, RejectionSampling, Repair, Requirement, req


def words_at_most(n: int) -> Requirement:
    return req(f"Use at most {n} words", lambda t: len(t.split()) <= n)


def has(word: str) -> Requirement:
    return req(f"Include the word '{word}'", lambda t: word.lower() in t.lower())


def lacks(word: str) -> Requirement:
    return req(f"Do not use the word '{word}'", lambda t: word.lower() not in t.lower())


def json_with(*fields: str) -> Requirement:
    def check(text: str) -> tuple[bool, str]:
        try:
            data = json.loads(text.strip().strip("`").removeprefix("json").strip())
        except ValueError as error:
            return False, f"not JSON: {error}"
        missing = [f for f in fields if not isinstance(data, dict) or f not in data]
        return not missing, f"missing {', '.join(missing)}" if missing else ""

    return req(f"Answer with a JSON object with the fields {', '.join(fields)}", check)


TASKS: list[tuple[str, list[Requirement]]] = [
    ("Name a red fruit.", [words_at_most(4)]),
    ("Describe the sea.", [words_at_most(8), has("water")]),
    ("Say hello to Ada.", [has("Ada"), lacks("hi")]),
    ("Describe a cat.", [json_with("name", "colour")]),
    ("Give a title for a story about a fox.", [has("fox"), words_at_most(6)]),
    ("Write one sentence about rain.", [has("rain"), lacks("umbrella"), words_at_most(12)]),
]

Strategies = dict[str, Callable[[int], object]]
STRATEGIES: Strategies = {
    "RejectionSampling(t=0.8)": lambda b: RejectionSampling(b, temperature=0.8),
    "Repair": lambda b: Repair(b),
    "BestOfN(t=0.8)": lambda b: BestOfN(b, temperature=0.8),
}


def run(tasks: int) -> list[tuple[str, int, int, int, int, float]]:
    rows = []
    for name, make in STRATEGIES.items():
        for budget in (1, 2, 3):
            held = requests = 0
            started = time.monotonic()
            for description, requirements in TASKS[:tasks]:
                session = start_session(options=GenerationOptions(max_tokens=48, temperature=0))
                reply = session.instruct(
                    description, requirements=requirements, strategy=make(budget)
                )
                held += reply.sampling.success
                requests += reply.sampling.requests
            seconds = time.monotonic() - started
            rows.append((name, budget, held, tasks, requests, seconds))
    return rows


def table(rows: list[tuple[str, int, int, int, int, float]]) -> str:
    lines = ["| strategy | budget | all hold | requests | seconds |", "|---|---|---|---|---|"]
    for name, budget, held, tasks, requests, seconds in rows:
        lines.append(f"| {name} | {budget} | {held}/{tasks} | {requests} | {seconds:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=len(TASKS))
    args = parser.parse_args()
    print(table(run(min(args.tasks, len(TASKS)))))


if __name__ == "__main__":
    main()
