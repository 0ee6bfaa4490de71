"""The engine's rules by name: each check, retry trigger and fallback can be switched off.

A rule acts on a reply the model wrote: it asks again (a check, named after the `Verdict`
it gives), holds something back, or changes what is released. Every rule that acted on a
reply is named in `Diagnostics.rules`. `PromptedBackend(inner, rules_off={"invented_value"})`
switches rules off by name, the checks of your own (`PromptedBackend(checks=...)`) included.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from attrs import field, frozen

from parlay.engine.checks.check import OwnRuleName
from parlay.engine.checks.defaults import ENGINE_CHECKS

# What the engine does besides asking again.
EngineRule = Literal[
    "words_fallback", "echo_filter", "duplicate_calls", "repeat_to_words",
    "repeat_beside_new", "words_after_drop", "results_as_answer",
]  # fmt: skip
# The checks' rules, described by each check (`checks.defaults` lists them).
VERDICT_RULES: dict[str, str] = {name: c.description for name, c in ENGINE_CHECKS.items()}
OTHER_RULES: dict[EngineRule, str] = {
    "words_fallback": "after a doubt about the turn, a forced call or a made-up value is asked "
    "again under the answer-only grammar, without an instruction",
    "echo_filter": "a plain reply that only repeats a retry message, a stand-in, the words the "
    "continuation wraps tool results in or, under tool_choice none, the instruction not to "
    "call is dropped; from a reply that says more, the clauses that only repeat them are "
    "taken out (`parlay.engine.checks.echo_trim`)",
    "duplicate_calls": "in the typed format, whose grammar holds its plural form to two calls "
    "or more, a call identical to an earlier one of the same reply is dropped",
    "repeat_to_words": "under auto, a reply whose every call repeats one the history answered "
    "is asked again under the answer-only grammar (without a grammar, a last such reply is "
    "dropped and an answer asked for): a repeat never goes out to loop a tool runner",
    "repeat_beside_new": "under auto, a call repeating one the history answered is dropped "
    "from a reply that makes new calls too: a tool that acts would act twice",
    "words_after_drop": "when the last reply was dropped by the echo filter, one more reply is "
    "asked for under tool_choice none, with no retry message to repeat",
    "results_as_answer": "under tool_choice none, when no try left any words after tool "
    "results, the results the conversation ends with are the answer, one line each",
}
# Looked up by any name (a user may ask for one that is not there): keyed by `str`.
RULES: dict[str, str] = {**VERDICT_RULES, **dict(OTHER_RULES.items())}
# All but the rules that earned their place on the development benchmark (bench/results/
# bfcl-ablation.md) are guards, each keeping a failure a user would see from reaching them
# (a test named after the failure shows it), on whatever a benchmark scores.
EARNED: frozenset[str] = frozenset(
    {
        *(name for name, c in ENGINE_CHECKS.items() if c.traits.earned),
        "words_fallback",
        "duplicate_calls",
    }
)
GUARDS: frozenset[str] = frozenset(RULES) - EARNED
# The rules `check_values` switches off (False) or on (True).
VALUE_RULES: frozenset[str] = frozenset(n for n, c in ENGINE_CHECKS.items() if c.traits.taught)


def _names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@frozen
class Rules:
    """Which rules are switched off (all are on by default)."""

    off: frozenset[str] = field(default=frozenset(), converter=_names)

    def on(self, name: str) -> bool:
        return name not in self.off

    def switched(
        self, *, off: Iterable[str] = (), on: Iterable[str] = (), values: bool | None = None
    ) -> Rules:
        """These rules with some switched off or on (`values`: the group `check_values`
        names; None leaves it)."""
        off, on = set(off), set(on)
        if values is not None:
            (on if values else off).update(VALUE_RULES)
        return Rules((self.off - on) | off)


__all__ = ["GUARDS", "RULES", "VALUE_RULES", "OwnRuleName", "Rules", "unknown_rules"]


def unknown_rules(names: Iterable[str], known: Iterable[str] = ()) -> list[str]:
    """The names, sorted, that are neither one of parlay's rules nor in `known`."""
    return sorted(set(names) - RULES.keys() - set(known))
