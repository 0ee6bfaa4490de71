"""Each rule of the engine can be switched off on its own, and every reply names the
rules that acted on it (what the ablation benchmark reads)."""

from __future__ import annotations

import json

import pytest

from parlay.context import ToolCall
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.retry import CallIssue, RetryPolicy
from parlay.engine.checks.rules import HEURISTICS_OPT_IN, OPT_IN, VALUE_RULES, VERDICT_RULES, Rules
from parlay.errors import ConfigurationError
from parlay.request import ToolChoice

from .conftest import WEATHER
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of


def final(text: str) -> str:
    return json.dumps({"final": {"content": text}})


def test_an_unknown_rule_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown rule.*missed_tol.*missed_tool"):
        Rules(frozenset({"missed_tol"}))
    with pytest.raises(ConfigurationError, match="unknown rule"):
        PromptedBackend(scripted(caps=PLAIN_SCHEMA), rules_off=["no_such_rule"])


def test_every_verdict_the_policy_can_give_has_a_rule_of_its_name() -> None:
    """Each check of the policy is switched by a rule of the engine (the user's own call
    rules aside), and every retry trigger has its check."""
    from parlay.engine.checks.retry import CHECKS

    names = [check.name for check in CHECKS]
    assert names.count(None) == 1  # the user's own call rules, switched one by one
    assert {name for name in names if name is not None} == set(VERDICT_RULES)


def test_with_a_verdict_rule_off_the_next_verdict_in_order_is_given() -> None:
    call = ToolCall("nope", {}, "c1")
    issues = [
        CallIssue(call, "unknown_tool", "nope"),
        CallIssue(call, "invalid_arguments", "bad", WEATHER),
    ]

    def judge(policy: RetryPolicy) -> str | None:
        verdict = policy.judge(
            calls=[call],
            issues=issues,
            problems=[],
            choice=ToolChoice("auto"),
            refusal=None,
            tools=[WEATHER],
        )
        return verdict.reason if verdict else None

    assert judge(RetryPolicy()) == "unknown_tool"
    assert judge(RetryPolicy(rules=Rules(frozenset({"unknown_tool"})))) == "invalid_arguments"
    both = Rules(frozenset({"unknown_tool", "invalid_arguments"}))
    assert judge(RetryPolicy(rules=both)) is None


async def test_the_rules_that_acted_are_named_in_the_diagnostics() -> None:
    inner = scripted(final("Sunny, I think."), final("Sunny in Rome."), caps=PLAIN_SCHEMA)
    events, finish = await run(
        PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN),
        ask("What's the current weather in Rome?"),
    )
    assert text_of(events) == "Sunny in Rome."
    assert finish.diagnostics.rules == ("missed_tool",)


async def test_a_reply_no_rule_acted_on_names_none() -> None:
    inner = scripted(block("get_weather", city="Rome"), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ask("Weather in Rome?"))
    assert calls_of(events) == [("get_weather", {"city": "Rome"})]
    assert finish.diagnostics.rules == ()


async def test_missed_tool_off_lets_the_first_plain_answer_stand() -> None:
    inner = scripted(final("Sunny, I think."), final("Sunny in Rome."), caps=PLAIN_SCHEMA)
    backend = PromptedBackend(inner, rules_off={"missed_tool"})
    events, finish = await run(backend, ask("What's the current weather in Rome?"))
    assert text_of(events) == "Sunny, I think." and finish.diagnostics.rules == ()
    assert len(inner.requests) == 1


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


async def test_kept_insisted_value_off_asks_about_the_value_again() -> None:
    from parlay.request import ToolSpec

    date = ToolSpec(
        "book",
        "Book a table.",
        {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]},
    )
    reply = block("book", day="2026-11-23")
    inner = scripted(reply, reply, reply)
    backend = PromptedBackend(inner, rules_on=HEURISTICS_OPT_IN, rules_off={"kept_insisted_value"})
    _, finish = await run(backend, ask("A table for tomorrow", tools=(date,)))
    assert [r.reason for r in finish.diagnostics.retries] == ["invented_value"] * 2
    _, kept = await run(
        PromptedBackend(scripted(reply, reply), rules_on=HEURISTICS_OPT_IN),
        ask("A table", tools=(date,)),
    )
    assert kept.diagnostics.rules == ("invented_value", "kept_insisted_value")


def test_check_values_false_is_the_value_rules_switched_off() -> None:
    backend = PromptedBackend(
        scripted(caps=PLAIN_SCHEMA), rules_on=HEURISTICS_OPT_IN, check_values=False
    )
    assert backend.rules.off >= VALUE_RULES
    assert backend.configure(max_retries=1).rules.off == backend.rules.off
    missed = PromptedBackend(
        scripted(caps=PLAIN_SCHEMA), rules_on=HEURISTICS_OPT_IN, check_missed_calls=False
    )
    # The heuristics were switched on; the other opt-in rules stay off as shipped.
    assert missed.rules.off == {"missed_tool"} | (OPT_IN - HEURISTICS_OPT_IN)


def test_rules_are_switched_on_and_off_by_name_and_by_group() -> None:
    base = Rules(frozenset({"missed_tool", "same_value"}))
    assert base.switched(on=["missed_tool"]).off == {"same_value"}
    assert base.switched(values=True).off == {"missed_tool"}  # the group on, same_value in it
    assert base.switched(missed_calls=False, values=False).off == VALUE_RULES | {"missed_tool"}
    with pytest.raises(ConfigurationError, match=r"unknown rule.*in rules_on"):
        base.switched(on=["missed_tol"])


def test_configure_switches_the_rules_as_they_are_not_as_they_ship() -> None:
    engine = PromptedBackend(scripted(caps=PLAIN_SCHEMA), rules_off=["missed_tool"])
    assert not engine.check_missed_calls
    same = engine.configure(max_retries=1)
    assert same.rules.off == engine.rules.off and same.max_retries == 1
    back_on = engine.configure(rules_on=["missed_tool"])
    assert back_on.check_missed_calls and back_on.policy.rules is back_on.rules
    no_values = engine.configure(check_values=False)
    assert not no_values.check_values and "missed_tool" in no_values.rules.off


def test_an_opt_in_rule_is_off_as_shipped_and_on_when_asked(monkeypatch) -> None:
    from parlay.engine.checks import rules

    monkeypatch.setattr(rules, "OPT_IN", frozenset({"missed_tool"}))
    shipped = PromptedBackend(scripted(caps=PLAIN_SCHEMA))
    assert not shipped.check_missed_calls
    assert PromptedBackend(scripted(caps=PLAIN_SCHEMA), rules_on=["missed_tool"]).check_missed_calls
    assert PromptedBackend(scripted(caps=PLAIN_SCHEMA), check_missed_calls=True).check_missed_calls


async def test_as_shipped_an_answer_from_memory_stands_and_no_opt_in_rule_acts() -> None:
    # missed_tool is opt-in: its gain was within its interval on both models.
    inner = scripted(final("Sunny, I think."), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ask("What's the current weather in Rome?"))
    assert text_of(events) == "Sunny, I think." and len(inner.requests) == 1
    assert finish.diagnostics is not None and finish.diagnostics.rules == ()
    nudged = scripted(
        final("Sunny, I think."), block("get_weather", city="Rome"), caps=PLAIN_SCHEMA
    )
    engine = PromptedBackend(nudged, rules_on=["missed_tool"])
    _, finish = await run(engine, ask("What's the current weather in Rome?"))
    assert finish.diagnostics is not None and finish.diagnostics.rules == ("missed_tool",)


def test_the_rule_name_types_list_every_rule_in_the_policys_order() -> None:
    """The Literal types mypy checks rule names against, and the tables the engine
    reads, name the same rules in the same order (a rule added to one only fails here)."""
    from typing import get_args

    from parlay.engine.checks.retry import IssueKind
    from parlay.engine.checks.rules import OTHER_RULES, VERDICT_RULES, EngineRule, VerdictReason
    from parlay.engine.contract.pieces import FORMATS, ActionFormat

    assert get_args(VerdictReason) == tuple(VERDICT_RULES)
    assert get_args(EngineRule) == tuple(OTHER_RULES)
    assert set(get_args(IssueKind)) <= set(VERDICT_RULES)
    assert get_args(ActionFormat) == FORMATS == ("fenced", "json", "command", "typed")


def test_the_policys_checks_are_an_ordered_list_a_user_can_extend() -> None:
    from parlay.engine.checks.retry import CHECKS, RuleCheck, Verdict
    from parlay.engine.checks.rules import OwnRuleName
    from parlay.request import ToolChoice

    def no_paris(reply) -> Verdict | None:  # type: ignore[no-untyped-def]
        paris = any(c.arguments.get("city") == "Paris" for c in reply.calls)
        return Verdict(OwnRuleName("no_paris"), "Paris") if paris else None

    reply = {
        "calls": [ToolCall("get_weather", {"city": "Paris"}, "c1")],
        "issues": [],
        "problems": [],
        "choice": ToolChoice("auto"),
        "refusal": None,
        "tools": [WEATHER],
    }
    assert RetryPolicy().judge(**reply) is None
    extended = RetryPolicy(checks=(*CHECKS, RuleCheck(None, no_paris)))
    verdict = extended.judge(**reply)
    assert verdict is not None and verdict.reason == "no_paris"
