"""Checking requirements against an output: code runs the functions, a model judges the
sentences.

The judge is asked one requirement at a time, with a prompt rendered from
`requirements/judge.j2` (copy it into your template folder to change it), and its first
"yes" or "no" is the verdict; what it says after is the reason. A reply with neither is
a failure whose reason says so: a requirement nobody could confirm does not hold.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence

from attrs import frozen

from parlay.backends.base import Backend
from parlay.context import UserMessage
from parlay.events import Usage
from parlay.observers import elapsed_ms
from parlay.reply import agather
from parlay.request import ChatRequest, GenerationOptions
from parlay.requirements.requirement import Requirement, Validation, outcome
from parlay.requirements.tracing import validation_span
from parlay.templating import render

JUDGE_TEMPLATE = "requirements/judge.j2"
# Short and greedy: the verdict is the first word, the reason one sentence.
JUDGE_OPTIONS = GenerationOptions(temperature=0.0, max_tokens=96)
_VERDICT = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_REASON_LIMIT = 300


@frozen
class Judging:
    """How model-judged requirements are asked: of which backend, with which template
    folder (None: $PARLAY_TEMPLATES, then parlay's own), about which task."""

    backend: Backend
    template_dir: str | os.PathLike[str] | None = None
    task: str | None = None
    options: GenerationOptions = JUDGE_OPTIONS


def judge_prompt(requirement: Requirement, output: str, judging: Judging) -> str:
    """The text the judge is asked for `requirement` (`requirements/judge.j2`)."""
    return render(
        JUDGE_TEMPLATE,
        judging.template_dir,
        requirement=requirement.description,
        output=output,
        task=judging.task,
    )


def verdict(reply: str) -> tuple[bool, str]:
    """The judge's verdict (its first "yes" or "no") and its reason (the rest, one line)."""
    found = _VERDICT.search(reply)
    if found is None:
        return False, f"the judge answered neither yes nor no: {_one_line(reply)!r}"
    rest = reply[found.end() :].lstrip(" \t\r\n.,:;!*-—")
    return found.group(1).lower() == "yes", _one_line(rest)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _REASON_LIMIT else flat[: _REASON_LIMIT - 1] + "…"


async def validate_one(requirement: Requirement, output: str, judging: Judging) -> Validation:
    """Check one requirement: by its function when it has one, else by the judge."""
    with validation_span(judging.backend, requirement) as span:
        started = time.monotonic()
        if requirement.validate is not None:
            passed, reason = outcome(requirement, requirement.validate(output))
            usage: Usage | None = None
        else:
            passed, reason, usage = await _ask_judge(requirement, output, judging)
        done = Validation(
            requirement,
            passed,
            reason,
            requirement.judged_by,
            usage,
            elapsed_ms(started, time.monotonic()),
        )
        span.finished(done)
        return done


async def _ask_judge(
    requirement: Requirement, output: str, judging: Judging
) -> tuple[bool, str, Usage | None]:
    prompt = judge_prompt(requirement, output, judging)
    request = ChatRequest(messages=(UserMessage(prompt),), options=judging.options)
    reply = await agather(judging.backend.stream(request))
    passed, reason = verdict(reply.text)
    return passed, reason, reply.finish.usage


async def validate_all(
    requirements: Sequence[Requirement], output: str, judging: Judging
) -> tuple[Validation, ...]:
    """Every requirement against `output`, one after another, in order."""
    return tuple([await validate_one(r, output, judging) for r in requirements])


__all__ = ["JUDGE_OPTIONS", "Judging", "judge_prompt", "validate_all", "verdict"]
