"""Each rule of the engine can be switched off on its own, and every reply names the
rules that acted on it (what the ablation benchmark reads)."""

from __future__ import annotations

import json

import pytest

from parlay.context import ToolCall
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.retry import CallIssue, Evidence, RetryPolicy
from parlay.engine.checks.rules import VALUE_RULES, VERDICT_RULES, Rules
from parlay.engine.policy import TurnPolicy
from parlay.errors import ConfigurationError
from parlay.request import ToolChoice

from .conftest import WEATHER
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted


def final(text: str) -> str:
    return json.dumps({"final": {"content": text}})


def test_an_unknown_rule_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown rule.*invented_valu.*invented_value"):
        RetryPolicy(rules=Rules(frozenset({"invented_valu"})))
    with pytest.raises(ConfigurationError, match="unknown rule"):
        PromptedBackend(scripted(caps=PLAIN_SCHEMA), rules_off=["no_such_rule"])


def test_every_verdict_the_policy_can_give_has_a_rule_of_its_name() -> None:
    """Each check of the policy is switched by a rule of the engine (the user's own call
    rules aside), and every retry trigger has its check."""
    from parlay.engine.checks.retry import DEFAULT_CHECKS

    assert {check.name for check in DEFAULT_CHECKS} == set(VERDICT_RULES)


def test_with_a_verdict_rule_off_the_next_verdict_in_order_is_given() -> None:
    call = ToolCall("nope", {}, "c1")
    issues = [
        CallIssue(call, "unknown_tool", "nope"),
        CallIssue(call, "invalid_arguments", "bad", WEATHER),
    ]

    def judge(policy: RetryPolicy) -> str | None:
        verdict = policy.judge(
            Evidence([call], issues, [], TurnPolicy.of_choice(ToolChoice("auto")), [WEATHER])
        )
        return verdict.reason if verdict else None

    assert judge(RetryPolicy()) == "unknown_tool"
    assert judge(RetryPolicy(rules=Rules(frozenset({"unknown_tool"})))) == "invalid_arguments"
    both = Rules(frozenset({"unknown_tool", "invalid_arguments"}))
    assert judge(RetryPolicy(rules=both)) is None


async def test_a_reply_no_rule_acted_on_names_none() -> None:
    inner = scripted(block("get_weather", city="Rome"), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ask("Weather in Rome?"))
    assert calls_of(events) == [("get_weather", {"city": "Rome"})]
    assert finish.diagnostics.rules == ()


async def test_words_fallback_off_asks_again_with_the_instruction_and_the_action_grammar() -> None:
    replies = [block("get_weather", city=c) for c in ("Springfield", "Shelbyville")]
    inner = scripted(*replies, final("Which city?"), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_off={"words_fallback"})
    _, finish = await run(backend, ask("Do a web search"))
    assert [r.response_format.name for r in inner.requests] == ["action"] * 3
    assert "words_fallback" not in finish.diagnostics.rules
    on = scripted(*replies, final("Which city?"), caps=PLAIN_SCHEMA)
    _, finish = await run(PromptedBackend(on), ask("Do a web search"))
    assert finish.diagnostics.rules == ("invented_value", "invented_value", "words_fallback")


def test_check_values_false_is_the_value_rules_switched_off() -> None:
    backend = PromptedBackend(scripted(caps=PLAIN_SCHEMA), check_values=False)
    assert backend.rules.off >= VALUE_RULES
    assert backend.configure(max_retries=1).rules.off == backend.rules.off


def test_rules_are_switched_on_and_off_by_name_and_by_group() -> None:
    base = Rules(frozenset({"invented_value", "refusal"}))
    assert base.switched(on=["refusal"]).off == {"invented_value"}
    assert base.switched(values=True).off == {"refusal"}  # the group on, invented_value in it
    assert base.switched(values=False).off == VALUE_RULES | {"refusal"}


def test_configure_keeps_the_rules_switched_off() -> None:
    engine = PromptedBackend(scripted(caps=PLAIN_SCHEMA), rules_off=["refusal"])
    assert engine.configure(max_retries=1).rules.off == {"refusal"}
    assert engine.configure(rules_on=["refusal"]).rules.off == frozenset()


async def test_as_shipped_every_rule_is_on() -> None:
    assert PromptedBackend(scripted(caps=PLAIN_SCHEMA)).rules.off == frozenset()


def test_the_rule_name_types_list_every_rule_in_the_policys_order() -> None:
    """The Literal type mypy checks the engine's other rules against, and the table the
    engine reads, name the same rules in the same order (a rule added to one only fails
    here); the checks' rules are listed from the checks, in the policy's order."""
    from typing import get_args

    from parlay.engine.checks.defaults import DEFAULT_CHECKS
    from parlay.engine.checks.rules import OTHER_RULES, VERDICT_RULES, EngineRule
    from parlay.engine.contract.pieces import FORMATS, ActionFormat

    assert get_args(EngineRule) == tuple(OTHER_RULES)
    last_places = list(dict.fromkeys(c.name for c in reversed(DEFAULT_CHECKS)))[::-1]
    assert list(VERDICT_RULES) == last_places
    assert get_args(ActionFormat) == FORMATS == ("fenced", "json", "typed")


def test_the_policys_checks_are_an_ordered_list_a_user_can_extend() -> None:
    from parlay.engine.checks.retry import DEFAULT_CHECKS, EngineCheck, Verdict
    from parlay.engine.checks.rules import OwnRuleName

    def no_paris(reply: Evidence) -> Verdict | None:
        paris = any(c.arguments.get("city") == "Paris" for c in reply.calls)
        return Verdict(OwnRuleName("no_paris"), "Paris") if paris else None

    call = ToolCall("get_weather", {"city": "Paris"}, "c1")
    reply = Evidence([call], [], [], TurnPolicy.of_choice(ToolChoice("auto")), [WEATHER])
    assert RetryPolicy().judge(reply) is None
    extended = RetryPolicy(checks=(*DEFAULT_CHECKS, EngineCheck("no_paris", no_paris)))
    verdict = extended.judge(reply)
    assert verdict is not None and verdict.reason == "no_paris"


def test_configure_refuses_an_unknown_rule_to_switch_on() -> None:
    engine = PromptedBackend(scripted(caps=PLAIN_SCHEMA))
    with pytest.raises(ConfigurationError, match=r"unknown rule.*refusl.*in rules_on"):
        engine.configure(rules_on=["refusl"])
