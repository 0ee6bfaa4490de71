"""The turn after a tool result, built from BFCL questions and judged by what it must do.

BFCL's categories judge a model's first decision only. What a session needs next — end
with an answer that carries the result, or make the call still missing — is asked here
on the same questions and the same halves (`bench.bfcl.split`). Each call question of
the development benchmark becomes one or two continuations:

- `all`: the conversation, the assistant making every call of the ground truth (each
  argument its first acceptable value), and a result for each. Nothing is left to do:
  right is no call, and an answer that carries every result. Each result is a number
  made from the question's id (`{"result": 48213}`), so "carries" is a plain check, and
  a model cannot pass it by wording alone.
- `some` (questions of two or more calls): only the first call made, with its result.
  Right is a call again: at least one, each naming a function still to call, none the
  same as the call already made (name and arguments).

Three wrong ways are counted apart, because they are what a user sees: `repeated` (a
call made again, name and arguments the same), `empty` (no call and no words) and
`parroted` (words copied from the continuation's instructions, alone or after an
answer; read from the stored text, so older runs are counted too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from attrs import frozen

from bench.bfcl.data import CALL_CATEGORIES, Question
from bench.bfcl.outcome import Reply, jsonable
from bench.bfcl.split import Half, id_hash, interleave, select
from parlay.context import AssistantMessage, ToolCall, ToolResult
from parlay.engine.checks.placeholders import PLACEHOLDERS

Stage = Literal["all", "some"]
STAGES: tuple[Stage, ...] = ("all", "some")
TEXT_KEPT = 600
# BFCL writes "" among the acceptable values of an argument that may be left out.
_LEFT_OUT = ""
_BETWEEN_DIGITS = re.compile(r"(?<=\d)[,\s_'](?=\d)")
# Clauses of the continuation's instructions (templates/contract/continuation.j2 and
# its probes) that no answer needs: a reply holding one copied parlay's words.
INSTRUCTION_CLAUSES = (
    "decide the next step",
    "no result above gives yet",
    "call another tool if the task still needs",
    "answer the user with",
    "more results are still coming",
)


@frozen
class Continuation:
    """A BFCL question carried on past the calls: `question` holds the longer
    conversation (the system under test reads nothing else), `made` the calls already
    made, `results` the number each returned, `still_to_call` the functions not called
    yet (empty for `all`)."""

    question: Question
    stage: Stage
    made: tuple[ToolCall, ...]
    results: tuple[int, ...]
    still_to_call: frozenset[str]

    @property
    def id(self) -> str:
        return f"{self.question.id}#{self.stage}"


def truth_calls(question: Question) -> list[ToolCall]:
    """The ground truth as calls: each argument its first acceptable value, the optional
    ones BFCL lets be left out, left out."""
    calls = []
    for index, entry in enumerate(question.ground_truth):
        [(name, accepted)] = entry.items()
        arguments = {}
        for parameter, values in accepted.items():
            kept = [v for v in values if v != _LEFT_OUT]
            if kept:
                arguments[parameter] = kept[0]
        calls.append(ToolCall(name, arguments, id=f"call_{index + 1}"))
    return calls


def result_number(question_id: str, index: int) -> int:
    """A five-digit number, fixed by the question and the call's place."""
    return 10_000 + id_hash(f"{question_id}:{index}") % 90_000


def continue_question(question: Question, stage: Stage) -> Continuation | None:
    """The question carried on to `stage`; None where the stage does not apply."""
    calls = truth_calls(question)
    if not calls or (stage == "some" and len(calls) < 2):
        return None
    made = tuple(calls if stage == "all" else calls[:1])
    numbers = tuple(result_number(question.id, i) for i in range(len(made)))
    results = tuple(
        ToolResult(call.id, call.name, json.dumps({"result": number}))
        for call, number in zip(made, numbers, strict=True)
    )
    longer = (*question.messages, AssistantMessage("", made), *results)
    carried = Question(
        question.id, question.category, longer, question.functions, question.ground_truth
    )
    still = frozenset(c.name for c in calls[len(made) :])
    return Continuation(carried, stage, made, numbers, still)


def continuations(half: Half, per_category: int | None) -> list[Continuation]:
    """Every continuation of the call categories' half, categories interleaved."""
    groups = []
    for category in CALL_CATEGORIES:
        picked = select(category, half, per_category)
        for stage in STAGES:
            made = (continue_question(q, stage) for q in picked)
            groups.append([c for c in made if c is not None])
    return interleave(groups)


def _same_call(name: str, arguments: Any, made: ToolCall) -> bool:
    return (
        name == made.name
        and isinstance(arguments, Mapping)
        and dict(arguments) == dict(made.arguments)
    )


def carries(text: str, number: int) -> bool:
    """Whether the answer states the number (written with or without separators)."""
    return str(number) in _BETWEEN_DIGITS.sub("", text)


def parrots(text: str) -> bool:
    """Whether `text` copies a clause of the continuation's instructions."""
    folded = " ".join(text.split()).lower()
    return any(clause in folded for clause in INSTRUCTION_CLAUSES)


def judge(continuation: Continuation, reply: Reply) -> dict[str, Any]:
    """The verdicts on the reply to a continuation (see the module's docstring)."""
    if reply.error:
        verdicts = ("right", "ended", "repeated", "carried", "empty", "placeholder", "parroted")
        return {**dict.fromkeys(verdicts, False), "error": reply.error}
    calls = reply.calls
    repeated = any(_same_call(n, a, m) for n, a in calls for m in continuation.made)
    text = reply.text.strip()
    carried = not calls and all(carries(text, n) for n in continuation.results)
    if continuation.stage == "all":
        right = carried
    else:
        right = (
            bool(calls) and not repeated and all(n in continuation.still_to_call for n, _ in calls)
        )
    folded = text.lower()
    return {
        "right": right,
        "ended": not calls,
        "repeated": repeated,
        "carried": carried,
        "empty": not calls and not text,
        "placeholder": any(p.lower() == folded.strip(" .\"'") for p in PLACEHOLDERS),
        "parroted": parrots(text),
        "error": "",
    }


def record(continuation: Continuation, reply: Reply, **keys: Any) -> dict[str, Any]:
    """The stored outcome: `keys` (model, system, config, half, tag, commit) first."""
    return {
        **keys,
        "category": continuation.question.category,
        "question": continuation.id,
        "stage": continuation.stage,
        **judge(continuation, reply),
        "calls": [{"name": n, "arguments": jsonable(a)} for n, a in reply.calls],
        "text": reply.text[:TEXT_KEPT],
        "retries": list(reply.retries),
        "rules": list(reply.rules),
        "seconds": round(reply.seconds, 2),
        # How the reply ended and leaned, for later looks at this turn (since stop 28).
        "completion_tokens": reply.completion_tokens,
        "answer_share": reply.answer_share,
    }
