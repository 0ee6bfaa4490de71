"""The checks of a plain answer: a stand-in of the instructions, the examples' made-up
result quoted (as a tool's or as is), and a refusal while tools are offered."""

from __future__ import annotations

from attrs import evolve

from parlay.engine.checks.check import (
    EngineCheck,
    Evidence,
    Traits,
    Verdict,
    good_calls,
    on_answer,
)

_COPIED = Traits(taught=True, doubtful=True, may_answer=True)


def _placeholder(reply: Evidence) -> Verdict | None:
    return Verdict(PLACEHOLDER_ANSWER.name, about_text=True) if reply.placeholder else None


def _pretended_call(reply: Evidence) -> Verdict | None:
    if not reply.copied_answer or (tool := reply.pretended_tool) is None:
        return None
    return Verdict(PRETENDED_CALL.name, tool.name, tool, about_text=True)


def _example_answer(reply: Evidence) -> Verdict | None:
    copied = reply.copied_answer
    return Verdict(EXAMPLE_ANSWER.name, copied, about_text=True) if copied else None


def _refusal(reply: Evidence) -> Verdict | None:
    """A refusal while tools are offered, asked about once: the model decides whether a
    tool answers it after all or its answer stands."""
    if reply.refusal is None or not reply.tools or REFUSAL.name in reply.earlier:
        return None
    return Verdict(REFUSAL.name, reply.refusal.phrase, about_text=True)


def _forced_refusal(reply: Evidence) -> Verdict | None:
    """Under a forced choice, a refusal instead of a call (judged before `no_call`)."""
    if not reply.policy.must_call or good_calls(reply) or reply.refusal is None:
        return None
    return Verdict(REFUSAL.name, reply.refusal.phrase, about_text=True)


PLACEHOLDER_ANSWER = EngineCheck(
    "placeholder_answer",
    on_answer(_placeholder),
    "a plain answer that is only a stand-in of the instructions",
    traits=Traits(to_words=True),
)
PRETENDED_CALL = EngineCheck(
    "pretended_call",
    on_answer(_pretended_call),
    "a plain answer quoting the examples' made-up result as a tool's",
    "contract/retry/pretended_call.j2",
    evolve(_COPIED, names_tool=True),
)
EXAMPLE_ANSWER = EngineCheck(
    "example_answer",
    on_answer(_example_answer),
    "a plain answer quoting the examples' made-up result",
    "contract/retry/example_answer.j2",
    _COPIED,
)
REFUSAL = EngineCheck(
    "refusal",
    on_answer(_refusal),
    "with tools offered, a hard or soft refusal ('I don't have access to real-time "
    "data') is asked once more: a call, or an answer that is no refusal",
    "contract/retry/refusal.j2",
    Traits(may_answer=True),
)
# The same check where a forced choice is judged, before `no_call`.
FORCED_REFUSAL = REFUSAL.judging(_forced_refusal)
