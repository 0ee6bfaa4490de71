"""What the echo trim would change in every stored reply after a tool result.

`parlay.engine.checks.echo_trim` takes out the clauses of a reply that only repeat the
continuation. This probe runs it, offline, over the text of every reply stored by the
turn-after-a-result benchmark (`bench/results/bfcl-after.jsonl`), each with the
continuation its system answered (the restated request on, as shipped, for all but the
embedded SmolLM2's engine): how many replies it changes, whether a right answer keeps
every result, and how many replies parroting an instruction clause still do.

    python -m bench.bfcl.probes.echo_trim          # as the replies were asked
    python -m bench.bfcl.probes.echo_trim --none   # as if under tool_choice none

With `--none`, the words of the instruction not to call are added to parlay's own, as
under tool_choice none (`parlay.engine.turn.not_to_call`), and each reply is
compared with its trim without them: what those words alone would take out of the
stored replies, whatever `tool_choice` they were asked under.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bfcl.after import STORE
from bench.bfcl.after_result import Continuation, carries, continuations, parrots
from bench.bfcl.split import HALVES
from parlay.backends.scripted import ScriptedBackend
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.echo_trim import EchoTrim
from parlay.engine.checks.own_words import continuation_words
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.engine.turn import not_to_call
from parlay.request import NONE, ChatRequest


def stored(path: Path = STORE) -> Iterator[dict[str, Any]]:
    with path.open() as lines:
        for line in lines:
            outcome = json.loads(line)
            if outcome["system"].startswith("parlay") and outcome.get("text"):
                yield outcome


def trim(continuation: Continuation, text: str, restate: bool, none: bool = False) -> str:
    options = ContractOptions(restate_request=restate)
    question = continuation.question
    request = ChatRequest(question.messages, tools=question.offered_tools)
    rendered = render_contract(request, options).messages
    own = continuation_words(request.messages, rendered, options)
    if none:
        asked = [m.content for m in request.messages if isinstance(m, UserMessage)]
        engine = PromptedBackend(ScriptedBackend([]), restate_request=restate)
        own = own.with_instructions(
            not_to_call(engine.settings, request.replace(tool_choice=NONE)), asked
        )
    trimmer = EchoTrim(own)
    return trimmer.feed(text) + trimmer.flush()


def main() -> None:
    none = sys.argv[1:] == ["--none"]
    by_id = {c.id: c for half in HALVES for c in continuations(half, None)}
    counts: Counter[str] = Counter()
    changed: list[tuple[str, str, str]] = []
    for outcome in stored():
        continuation = by_id.get(outcome["question"])
        if continuation is None:
            continue
        restate = not (outcome["model"] == "smollm2" and outcome["system"] == "parlay")
        text = outcome["text"]
        if none:  # the none words alone: against the trim without them
            text = trim(continuation, text, restate)
        after = trim(continuation, text, restate, none)
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
