"""What the echo trim would change in every stored reply after a tool result.

`parlay.contract.echo_trim` takes out the clauses of a reply that only repeat the
continuation. This probe runs it, offline, over the text of every reply stored by the
turn-after-a-result benchmark (`bench/results/bfcl-after.jsonl`), each with the
continuation its system answered (the restated request on, as shipped, for all but the
embedded SmolLM2's engine): how many replies it changes, whether a right answer keeps
every result, and how many replies parroting an instruction clause still do.

    python -m bench.bfcl.probes.echo_trim
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bfcl.after import STORE
from bench.bfcl.after_result import Continuation, carries, continuations, parrots
from bench.bfcl.split import HALVES
from parlay.contract.echo_trim import EchoTrim
from parlay.contract.own_words import continuation_words
from parlay.contract.pieces import ContractOptions
from parlay.contract.render import render_contract
from parlay.request import ChatRequest


def stored(path: Path = STORE) -> Iterator[dict[str, Any]]:
    with path.open() as lines:
        for line in lines:
            outcome = json.loads(line)
            if outcome["system"].startswith("parlay") and outcome.get("text"):
                yield outcome


def trim(continuation: Continuation, text: str, restate: bool) -> str:
    options = ContractOptions(restate_request=restate)
    question = continuation.question
    request = ChatRequest(question.messages, tools=question.offered_tools)
    rendered = render_contract(request, options).messages
    trimmer = EchoTrim(continuation_words(request.messages, rendered, options))
    return trimmer.feed(text) + trimmer.flush()


def main() -> None:
    by_id = {c.id: c for half in HALVES for c in continuations(half, None)}
    counts: Counter[str] = Counter()
    changed: list[tuple[str, str, str]] = []
    for outcome in stored():
        continuation = by_id.get(outcome["question"])
        if continuation is None:
            continue
        restate = not (outcome["model"] == "smollm2" and outcome["system"] == "parlay")
        text = outcome["text"]
        after = trim(continuation, text, restate)
        counts["replies"] += 1
        counts["parroted before"] += parrots(text)
        counts["parroted after"] += parrots(after)
        if outcome["right"]:
            counts["right"] += 1
        if after == text:
            continue
        counts["changed"] += 1
        keeps = all(carries(after, n) for n in continuation.results)
        if outcome["right"] and outcome["stage"] == "all":
            counts["right, changed"] += 1
            counts["right, changed, still carries every result"] += keeps
        changed.append((outcome["question"], text[:160], after[:160]))
    for key, value in counts.items():
        print(f"{key}: {value}")
    for question, before, after in changed:
        print(f"\n{question}\n  before: {before!r}\n  after:  {after!r}")


if __name__ == "__main__":
    main()
