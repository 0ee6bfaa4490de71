"""A turn's opening and each attempt's setup: the contract rendered, the first grammar,
what the attempts share, and the streaming mode each attempt may use."""

from __future__ import annotations

import logging

from attrs import evolve

from parlay.context import ToolCall, UserMessage
from parlay.engine.attempt import Attempt, AttemptSetup
from parlay.engine.checks.calls import CheckedCall, answered_calls, check_call
from parlay.engine.checks.own_words import OwnWords, continuation_words
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.contract.pieces import render_template
from parlay.engine.contract.render import Contract, render_contract
from parlay.engine.next_attempt import grammar_for
from parlay.engine.policy import TurnPolicy
from parlay.engine.settings import EngineSettings
from parlay.engine.turn import Turn
from parlay.request import ChatRequest

logger = logging.getLogger("parlay.prompted")
# Alternatives per token asked of the inner backend for `forced.name_choices`.
NAME_ALTERNATIVES = 5


def begin_turn(settings: EngineSettings, request: ChatRequest) -> Turn:
    """The contract rendered, the first grammar, and what the attempts share."""
    policy = TurnPolicy.of(request, settings.policy.max_retries)
    constrained = settings.uses_constraint(request)
    # Under tool_choice="none" a reply must be words, but is not held to the answer
    # grammar (under it a small model answers with a fragment of the question); a reply
    # that is only an action is asked again in words instead (`wants_words`).
    contract = render_contract(request, settings.options, constrained=constrained)
    response_format = request.response_format
    if constrained:
        response_format = grammar_for(settings, contract.tools, request)
    # The model's own choice of tool names is only hidden when a grammar picks them.
    read_names = constrained and policy.model_decides and settings.min_offered_share > 0
    # ... and how sure it was of calling, where the knob asks.
    read_lean = constrained and policy.model_decides and bool(settings.min_call_confidence)
    # Alternatives only for the engine's own reading: the text it hands on is parsed
    # out of the model's actions, so a caller's log-probabilities would not fit it
    # and asking the server for them would be wasted.
    alternatives = NAME_ALTERNATIVES if read_names or read_lean else None
    options = evolve(request.options, top_logprobs=alternatives)
    _log_contract(settings, contract, policy, constrained)
    return Turn(
        request,
        policy,
        contract,
        constrained,
        read_names,
        contract.messages,
        response_format,
        options,
        answered_calls(request.messages),
        own_words=_own_words(settings, request, contract, policy),
    )


def _log_contract(
    settings: EngineSettings, contract: Contract, policy: TurnPolicy, constrained: bool
) -> None:
    logger.debug(
        "contract injected: format=%s tools=%s choice=%s state=%s constrained=%s",
        settings.options.action_format,
        [spec.name for spec in contract.tools],
        policy.mode,
        contract.state.value,
        constrained,
    )


def _own_words(
    settings: EngineSettings, request: ChatRequest, contract: Contract, policy: TurnPolicy
) -> OwnWords:
    """parlay's own words in what the model answers: the continuation's, and under
    tool_choice="none" the instruction not to call."""
    own_words = continuation_words(request.messages, contract.messages, settings.options)
    if policy.may_call:
        return own_words
    asked = [m.content for m in request.messages if isinstance(m, UserMessage)]
    return own_words.with_instructions(not_to_call(settings, request), asked)


def not_to_call(settings: EngineSettings, request: ChatRequest) -> tuple[str, ...]:
    """parlay's words telling the model not to call, under tool_choice="none" (the rule of
    the system prompt and the retry message): a model may answer with them."""

    options, choice = settings.options, request.tool_choice
    rule = render_template(options, "contract/choice_rule.j2", choice=choice)
    retry = retry_instruction("words_only", "", 1, request.tools, choice, options)
    return rule.strip().removeprefix("- "), retry


def next_attempt(settings: EngineSettings, turn: Turn, can_retry: bool) -> Attempt:
    """A new attempt, streaming in the mode its place in the turn allows."""
    policy = turn.policy
    mode = policy.streaming(can_retry, retried=bool(turn.retries))
    turn.modes.append(mode)
    specs, contract, answered = turn.specs, turn.contract, turn.answered

    def check(call: ToolCall) -> CheckedCall:
        return check_call(
            call,
            specs,
            contract,
            answered,
            check_values=settings.check_values,
            own_rules=settings.policy.call_rules,
        )

    return Attempt(
        AttemptSetup(
            mode,
            check=check,
            may_call=policy.may_call,
            refusal_phrases=settings.refusal_phrases,
            # Text is held for the refusal check only while it is on.
            refusal_window=settings.refusal_window if settings.rules.on("refusal") else 0,
            suppress_text=turn.shown_text,
            parallel=policy.parallel,
            drop_duplicates=settings.rules.on("duplicate_calls")
            and settings.options.action_format == "typed",
            own_words=turn.own_words if settings.rules.on("echo_filter") else OwnWords(),
            trim_clauses=turn.request.response_format is None,
        )
    )
