"""parlay's own checks, in the order they are judged, most important first: the one list
that names them all (`rules.RULES` describes each from it)."""

from __future__ import annotations

from parlay.engine.checks.answer_checks import (
    EXAMPLE_ANSWER,
    FORCED_REFUSAL,
    PLACEHOLDER_ANSWER,
    PRETENDED_CALL,
    REFUSAL,
)
from parlay.engine.checks.call_checks import (
    EXAMPLE_VALUE,
    INVALID_ARGUMENTS,
    INVENTED_VALUE,
    REPEATED_CALL,
    UNKNOWN_TOOL,
    UNREADABLE,
)
from parlay.engine.checks.check import Check, EngineCheck, Traits
from parlay.engine.checks.choice_checks import NO_CALL, WORDS_ONLY, WRONG_TOOL
from parlay.engine.checks.unsure_checks import FORCED_CALL, UNSURE_CALL

DEFAULT_CHECKS: tuple[Check, ...] = (
    UNKNOWN_TOOL,
    INVALID_ARGUMENTS,
    REPEATED_CALL,
    UNREADABLE,
    FORCED_CALL,
    UNSURE_CALL,
    WRONG_TOOL,
    EXAMPLE_VALUE,
    INVENTED_VALUE,
    FORCED_REFUSAL,
    NO_CALL,
    PLACEHOLDER_ANSWER,
    PRETENDED_CALL,
    EXAMPLE_ANSWER,
    REFUSAL,
    WORDS_ONLY,
)
# Each of parlay's checks by name, in the order of its last place in the list (a check
# judged at two points, like the refusal, is listed once).
ENGINE_CHECKS: dict[str, EngineCheck] = dict(
    reversed({c.name: c for c in reversed(DEFAULT_CHECKS) if isinstance(c, EngineCheck)}.items())
)


def engine_check(reason: str) -> EngineCheck | None:
    """parlay's check of this name (None: a check of your own)."""
    return ENGINE_CHECKS.get(reason)


def traits(reason: str) -> Traits:
    """What the engine does after a verdict of this reason (a check of your own: nothing
    besides asking again)."""
    check = ENGINE_CHECKS.get(reason)
    return check.traits if check is not None else Traits()
