"""One request through the prompted engine: its `Opening` (frozen), what passes from one
attempt to the next (`NextRequest`, the `Judgement` on each), and the `TurnReport` the
closing `Finish` and its `Diagnostics` are made from, held by `TurnState`."""

from __future__ import annotations

import logging
from functools import partial

from attrs import Factory, define, evolve, frozen

from parlay.backends.bounds import with_max_tokens
from parlay.context import Message, UserMessage
from parlay.diagnostics import Diagnostics, RetryRecord
from parlay.engine.attempt import Attempt, AttemptSetup
from parlay.engine.checks.answer_checks import REFUSAL
from parlay.engine.checks.checked_calls import answered_calls, check_call
from parlay.engine.checks.choice_checks import WORDS_ONLY
from parlay.engine.checks.confidence import answer_share
from parlay.engine.checks.own_words import OwnWords, continuation_words
from parlay.engine.checks.refusal import RefusalSignal
from parlay.engine.checks.retry import Verdict
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.contract.pieces import render_template
from parlay.engine.contract.render import Contract, render_contract
from parlay.engine.policy import StreamingMode, TurnPolicy
from parlay.engine.settings import EngineSettings
from parlay.events import Finish, FinishReason, Usage
from parlay.request import AUTO, ChatRequest, ResponseFormat

logger = logging.getLogger("parlay.prompted")
# Alternatives per token asked of the inner backend for `forced.name_choices`.
NAME_ALTERNATIVES = 5


@frozen
class NextRequest:
    """What the next attempt sends: the messages, the grammar, and the message the last
    retry added ("" for none)."""

    messages: tuple[Message, ...]
    response_format: ResponseFormat | None
    instruction: str = ""


@frozen
class Judgement:
    """What the judging makes of an attempt, for the turn to take in (`TurnState.take`):
    the verdict and the next attempt's request, or the attempt released (or dropped), and
    what the turn reports of either (made in `judging`)."""

    verdict: Verdict | None = None
    next: NextRequest | None = None  # with a verdict: what the next attempt sends
    released: Attempt | None = None  # without one: the attempt whose events go out
    refusal: RefusalSignal | None = None  # a refusal the reply made, to report
    fired: tuple[str, ...] = ()  # the rules that acted, in order
    notes: tuple[str, ...] = ()
    dropped: bool = False  # the reply only repeated parlay's own words
    shown_text: bool = False  # the attempt asked again had shown text


@frozen
class Opening:
    """A turn as it opened: what every part reads of it, and none changes."""

    settings: EngineSettings
    request: ChatRequest
    policy: TurnPolicy
    contract: Contract
    # parlay's own words in what the model answers (`continuation_words`).
    own_words: OwnWords
    constrained: bool  # held to a grammar (`EngineSettings.uses_constraint`)

    @property
    def read_confidence(self) -> bool:
        """Whether how sure the model was of calling is read (`checks.confidence`): where
        it decides, and a grammar would hide its choice."""
        decides = self.constrained and self.policy.model_decides
        return decides and self.settings.min_call_confidence > 0


@define
class TurnReport:
    """What the closing `Diagnostics` say of a turn, gathered as it goes."""

    retries: list[RetryRecord] = Factory(list)
    fired: list[str] = Factory(list)  # the rules that acted, in order (`Diagnostics.rules`)
    notes: list[str] = Factory(list)
    modes: list[StreamingMode] = Factory(list)
    finishes: list[Finish] = Factory(list)  # of the attempts, and of the words asked after
    refusal: RefusalSignal | None = None
    emitted_calls: int = 0
    repetition: str | None = None  # what a looping attempt repeated
    answer_share: float | None = None  # the first reply's lean to words (`leaning`)
    cut_call: bool = False  # the last attempt stopped at its limit inside a call

    def fire(self, rule: str, note: str = "") -> None:
        """A rule acted (and what it did, for the notes)."""
        self.fired.append(rule)
        self.notes.extend([note] if note else [])

    def words_after(self, finish: Finish) -> None:
        """The closing of the words asked for after a dropped reply: its rules, each named
        once, and its notes."""
        self.finishes.append(finish)
        if finish.diagnostics is not None:
            self.fired.extend(r for r in finish.diagnostics.rules if r not in self.fired)
            self.notes.extend(finish.diagnostics.notes)

    def take(self, judgement: Judgement) -> None:
        self.refusal = self.refusal or judgement.refusal
        if (verdict := judgement.verdict) is not None:
            self.retries.append(RetryRecord(verdict.reason, verdict.detail))
        self.fired.extend(judgement.fired)
        self.notes.extend(judgement.notes)

    def ended(self, attempt: Attempt, finish: Finish) -> None:
        """How an attempt's reply ended."""
        problems = attempt.parsed.problems
        self.cut_call = attempt.cut_by_limit and any(p.kind == "cut_off" for p in problems)
        self.finishes.append(finish)
        if finish.diagnostics is not None and finish.diagnostics.repetition:
            self.repetition = finish.diagnostics.repetition
            self.notes.extend(finish.diagnostics.notes)
        elif finish.reason == "length":
            self.notes.append("the reply was cut by the token limit")

    @property
    def usage(self) -> Usage | None:
        """None when an attempt ended without a count (the guard closed its stream first):
        the sum of the others would pass for the whole."""
        usages = [finish.usage for finish in self.finishes if finish.usage is not None]
        if not usages or len(usages) < len(self.finishes):
            return None
        return sum(usages[1:], usages[0])

    def finish(self, opening: Opening) -> Finish:
        """The closing event: why the reply ended, its usage, and what the engine did."""
        reason: FinishReason = "tool_calls" if self.emitted_calls else "stop"
        if self.emitted_calls and self.cut_call:
            reason = "length"  # a client must not take a cut call for a whole one
        last = self.finishes[-1] if self.finishes else None
        if not self.emitted_calls and last is not None and last.reason != "tool_calls":
            reason = last.reason
        diagnostics = Diagnostics(
            contract_injected=True,
            action_format=opening.settings.options.action_format,
            tool_history_detected=opening.contract.tool_history,
            calls_parsed=self.emitted_calls,
            retries=tuple(self.retries),
            refusal=f"{self.refusal.kind}: {self.refusal.phrase}" if self.refusal else None,
            constrained=opening.constrained,
            notes=tuple(self.notes),
            tool_state=opening.contract.state.value,
            streaming="/".join(self.modes),
            repetition=self.repetition,
            rules=tuple(self.fired),
            answer_share=self.answer_share,
        )
        raw, model = (last.raw, last.model) if last else (None, None)
        return Finish(reason, self.usage, raw=raw, diagnostics=diagnostics, model=model)


@define
class TurnState:
    """What changes while the engine works on one request: the next request, what the
    closing diagnostics will say, and what was shown or held back. Only its own methods
    change it, from what the attempts and the judging (`Judgement`) give."""

    opening: Opening
    next: NextRequest  # what the next attempt sends
    report: TurnReport = Factory(TurnReport)
    shown_any: bool = False  # an event went out
    shown_text: bool = False  # an attempt before the next one showed text
    dropped: bool = False  # the last reply only repeated parlay's own words
    withheld: str = ""  # the last reply the echo trim took out whole, as written

    def inner_request(self) -> ChatRequest:
        """What the next attempt sends. Alternatives per token only for the engine's own
        reading: the text it hands on is parsed out of actions, a caller's would not fit."""
        opening = self.opening
        alternatives = NAME_ALTERNATIVES if opening.read_confidence else None
        request = opening.request.replace(
            messages=self.next.messages,
            tools=(),
            tool_choice=AUTO,
            response_format=self.next.response_format,
            options=evolve(opening.request.options, top_logprobs=alternatives),
        )
        return with_max_tokens(request, opening.settings.max_tokens)

    def next_attempt(self, can_retry: bool) -> Attempt:
        """A new attempt, streaming in the mode its place in the turn allows."""
        opening = self.opening
        settings, policy, rules = opening.settings, opening.policy, opening.settings.policy.rules
        mode = policy.streaming(can_retry, retried=bool(self.report.retries))
        self.report.modes.append(mode)
        specs = {spec.name: spec for spec in opening.contract.tools}
        answered = answered_calls(opening.request.messages)
        check = partial(check_call, specs=specs, contract=opening.contract, answered=answered)
        values, own_rules = settings.check_values, settings.policy.call_rules
        setup = AttemptSetup(
            mode,
            check=partial(check, check_values=values, own_rules=own_rules),
            may_call=policy.may_call,
            refusal_phrases=settings.refusal_phrases,
            # Text is held for the refusal check only while it is on.
            refusal_window=settings.refusal_window if rules.on(REFUSAL.name) else 0,
            suppress_text=self.shown_text,
            parallel=policy.parallel,
            drop_duplicates=rules.on("duplicate_calls")
            and settings.options.action_format == "typed",
            own_words=opening.own_words if rules.on("echo_filter") else OwnWords(),
            trim_clauses=opening.request.response_format is None,
        )
        return Attempt(setup, specs, settings.options.thought_limit)

    def take(self, judgement: Judgement) -> None:
        """What the judging of an attempt changes: the next request, what is reported."""
        self.report.take(judgement)
        self.next = judgement.next or self.next
        self.dropped = self.dropped or judgement.dropped
        self.shown_text = self.shown_text or judgement.shown_text

    def record(self, attempt: Attempt) -> None:
        """What an attempt noted, what it cost, and how it ended."""
        report = self.report
        if len(report.modes) == 1:  # the first reply: how much it leaned to words
            action_format = self.opening.settings.options.action_format
            report.answer_share = answer_share(attempt.tokens, action_format)
        report.notes.extend(attempt.notes)
        if attempt.trim.dropped and attempt.trim.shown_any:
            # (A reply with nothing else is dropped whole, and named so, by the judging.)
            report.fired.append("echo_filter")
        elif attempt.trim.took_all:
            self.withheld = "".join(attempt.trim.dropped).strip()
        report.notes.extend(f"{p.kind}: {p.detail}" for p in attempt.parsed.problems)
        if attempt.finish is not None:
            report.ended(attempt, attempt.finish)

    def finish(self) -> Finish:
        return self.report.finish(self.opening)


def open_turn(settings: EngineSettings, request: ChatRequest) -> TurnState:
    """The contract rendered, the first grammar, and parlay's own words the model sees."""
    policy = TurnPolicy.of(request, settings.policy.max_retries)
    constrained = settings.uses_constraint(request)
    # Under tool_choice="none" a reply must be words, but is not held to the answer
    # grammar (under it a small model answers with a fragment of the question); a reply
    # that is only an action is asked again in words instead (the `words_only` check).
    contract = render_contract(request, settings.options, constrained=constrained)
    grammar = settings.grammar(contract.tools, request) if constrained else request.response_format
    logger.debug(
        "contract injected: format=%s tools=%s choice=%s state=%s constrained=%s",
        settings.options.action_format,
        [spec.name for spec in contract.tools],
        policy.mode,
        contract.state.value,
        constrained,
    )
    own_words = continuation_words(request.messages, contract.messages, settings.options)
    if not policy.may_call:
        asked = [m.content for m in request.messages if isinstance(m, UserMessage)]
        own_words = own_words.with_instructions(not_to_call(settings, request), asked)
    opening = Opening(settings, request, policy, contract, own_words, constrained)
    return TurnState(opening, NextRequest(contract.messages, grammar))


def not_to_call(settings: EngineSettings, request: ChatRequest) -> tuple[str, ...]:
    """parlay's words telling the model not to call, under tool_choice="none" (the rule of
    the system prompt and the retry message): a model may answer with them."""
    options, policy = settings.options, TurnPolicy.of(request)
    rule = render_template(options, "contract/choice_rule.j2", choice=policy.choice)
    retry = retry_instruction(WORDS_ONLY.name, "", 1, request.tools, policy, options)
    return rule.strip().removeprefix("- "), retry
