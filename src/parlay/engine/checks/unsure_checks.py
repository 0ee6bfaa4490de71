"""The checks of a call the model was not sure of (`checks.confidence` reads how sure):
one the grammar forced on it, or a first reply calling while it leaned to answering."""

from __future__ import annotations

from attrs import evolve

from parlay.engine.checks.check import EngineCheck, Evidence, Traits, Verdict, tool_named

_UNSURE = Traits(doubtful=True, to_words=True)


def _forced_call(reply: Evidence) -> Verdict | None:
    if reply.forced is None or not reply.policy.model_decides:
        return None
    spec = tool_named(reply.tools, reply.forced.call.name)
    return Verdict(FORCED_CALL.name, reply.forced.describe(), spec)


def _unsure_call(reply: Evidence) -> Verdict | None:
    if reply.unsure is None or not reply.policy.model_decides or not reply.calls:
        return None
    share = f"{1 - reply.unsure:.0%} of its weight on calling"
    return Verdict(UNSURE_CALL.name, share, tool_named(reply.tools, reply.calls[0].name))


FORCED_CALL = EngineCheck(
    "forced_call",
    _forced_call,
    "under auto, the grammar forced a call on a model leaning elsewhere",
    traits=_UNSURE,
)
UNSURE_CALL = EngineCheck(
    "unsure_call",
    _unsure_call,
    "under auto, a first reply calls while the model put less than "
    "`min_call_confidence` of its weight on calling rather than answering",
    "contract/retry/unsure_call.j2",
    evolve(_UNSURE, may_answer=True),
)
