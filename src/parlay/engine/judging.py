"""After an attempt: whether to ask again, what is released, and what is sent next.

The retry policy (`parlay.engine.checks.retry`) gives the verdict; this module gathers what
its checks read (a refusal, a copied answer, a call the grammar forced, how sure the
model was of calling) and applies the rules that act after it: a reply repeating
parlay's own words is dropped (`echo_filter`), and so are repeats of answered calls.
Most retries add the reply and an instruction naming what was wrong; the others change
what is sent (`_ask_again`) or hold the retry to the answer-only grammar (`_words_rule`),
as the verdict's check says (`checks.check.Traits`). Nothing here changes the turn: `judge`
returns a `Judgement`, which the turn takes in.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from attrs import evolve

from parlay.context import AssistantMessage, Message, UserMessage
from parlay.engine.attempt import Attempt
from parlay.engine.checks.call_checks import only_repeats, repeated_ids, repeated_names
from parlay.engine.checks.confidence import NameChoice, leans_to_words, name_choices
from parlay.engine.checks.defaults import traits
from parlay.engine.checks.placeholders import is_debris, is_placeholder
from parlay.engine.checks.refusal import RefusalSignal, asks_user, detect_refusal
from parlay.engine.checks.retry import Evidence, Verdict
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.checks.rules import EngineRule
from parlay.engine.contract.constrain import final_schema
from parlay.engine.contract.grounding import copied_answer, echoes
from parlay.engine.contract.pieces import ActionFormat
from parlay.engine.contract.render import render_contract
from parlay.engine.contract.state import ToolState
from parlay.engine.turn import Judgement, NextRequest, Opening, TurnState
from parlay.request import NONE, ChatRequest, ResponseFormat, ToolSpec

logger = logging.getLogger("parlay.prompted")


def words_format(request: ChatRequest, action_format: ActionFormat) -> ResponseFormat:
    """The grammar of an answer in words: the caller's format if any, else plain text in
    the format's answer shape."""
    only = ResponseFormat(final_schema(action_format), name="final", strict=True)
    return request.response_format or only


def judge(turn: TurnState, attempt: Attempt, attempt_no: int, can_retry: bool) -> Judgement:
    """Attempt number `attempt_no` judged: asked again, or released."""
    verdict, refusal, notes = _verdict(turn, attempt, attempt_no)
    if verdict is not None:
        return evolve(_retry(turn, verdict, attempt), refusal=refusal)
    released = _release(turn, attempt, can_retry)
    return evolve(released, refusal=refusal, notes=(*notes, *released.notes))


def _verdict(
    turn: TurnState, attempt: Attempt, attempt_no: int
) -> tuple[Verdict | None, RefusalSignal | None, tuple[str, ...]]:
    """Why the attempt should be retried (None: it is released), the refusal to report,
    and a note when a verdict came too late."""
    text, opening = attempt.parsed.text, turn.opening
    signal = detect_refusal(text, opening.settings.refusal_phrases)
    if signal is not None and signal.kind == "soft" and asks_user(text):
        # "Which city? I can't check the weather without one." asks for what a tool
        # needs: the right reply, not a claim that no tool could help.
        signal = None
    if not opening.policy.budget_left(attempt_no):
        return None, signal, ()
    verdict = opening.settings.policy.judge(_reply(turn, attempt, signal))
    # A reply asked again for words is no refusal.
    refusal = signal if verdict is None or opening.policy.may_call else None
    if verdict is not None and verdict.about_text and attempt.shown_text:
        return None, refusal, (f"not retried ({verdict.reason}): the text was already shown",)
    return verdict, refusal, ()


def _reply(turn: TurnState, attempt: Attempt, signal: RefusalSignal | None) -> Evidence:
    """What the policy's checks judge of the reply, gathered here."""
    opening, parsed, text = turn.opening, attempt.parsed, attempt.parsed.text
    contract = opening.contract
    copied = copied_answer(text, contract.example_answers) if opening.settings.check_values else ""
    return Evidence(
        calls=parsed.calls,
        issues=attempt.issues,
        problems=parsed.problems,
        policy=opening.policy,
        tools=contract.tools,
        text=text,
        refusal=signal,
        copied_answer=copied,
        pretended_tool=named_tool(text, contract.tools) if copied else None,
        forced=forced_choice(opening, attempt) if opening.read_confidence else None,
        placeholder=is_placeholder(text) or is_debris(text),
        unsure=_unsure_share(turn),
        earlier=tuple(record.reason for record in turn.report.retries),
        echo=attempt.trim.took_all,
    )


def _retry(turn: TurnState, verdict: Verdict, attempt: Attempt) -> Judgement:
    """The attempt after `verdict`: what it sends, and the rules that acted."""
    words_only, echo = traits(verdict.reason).under_none, attempt.trim.took_all
    fired, notes = [verdict.reason], list[str]()
    if words_only and echo:
        fired.insert(0, "echo_filter")
        notes.append("dropped a reply that only repeated the instruction not to call")
    tries, most = len(turn.report.retries) + 1, turn.opening.policy.retries
    logger.info("retry %d/%d: %s %s", tries, most, verdict.reason, verdict.detail)
    if (to_words := _words_rule(turn, verdict)) is not None:
        fired.append(to_words)
        next_request = answer_only(turn.opening)
    elif words_only and turn.opening.settings.grammar_available and (echo or tries >= most):
        # After an echo of the instruction not to call, or on the last try, the
        # answer-only grammar rather than the instruction shown again.
        next_request = answer_only(turn.opening)
    else:
        next_request = _ask_again(turn, verdict, attempt)
    return Judgement(
        verdict, next_request, fired=tuple(fired), notes=tuple(notes), shown_text=attempt.shown_text
    )


def answer_only(opening: Opening) -> NextRequest:
    """The next attempt under the answer-only grammar: the conversation rendered as under
    tool_choice="none", with no examples and no instruction (models copy both)."""
    request, action_format = opening.request, opening.settings.options.action_format
    messages = _without_examples(opening, request.replace(tool_choice=NONE), True)
    return NextRequest(messages, words_format(request, action_format))


def _ask_again(turn: TurnState, verdict: Verdict, attempt: Attempt) -> NextRequest:
    """The next attempt told what was wrong: after the reply, or (what the examples
    taught) afresh without them."""
    opening, after, grammar = turn.opening, traits(verdict.reason), turn.next.response_format
    if after.repeats:
        grammar = _away_from_repeats(turn, attempt)
    elif after.names_tool and verdict.tool is not None and opening.constrained:
        # The model wrote a made-up result for this tool: it may call it, or answer.
        grammar = opening.settings.grammar((verdict.tool,), opening.request)
    instruction = retry_instruction(
        verdict.reason,
        verdict.detail,
        len(turn.report.retries) + 1,
        opening.contract.tools,
        opening.policy,
        opening.settings.options,
        verdict.tool,
        constrained=opening.constrained,
        argument=verdict.argument,
    )
    if after.taught:
        before = _without_examples(opening, opening.request, opening.constrained)
    else:  # these messages, and the reply
        before = (*turn.next.messages, AssistantMessage("".join(attempt.raw)))
    return NextRequest((*before, UserMessage(instruction)), grammar, instruction)


def _without_examples(
    opening: Opening, request: ChatRequest, constrained: bool
) -> tuple[Message, ...]:
    plain = evolve(opening.settings.options, few_shot=False)
    return render_contract(request, plain, constrained=constrained).messages


def _words_rule(turn: TurnState, verdict: Verdict) -> EngineRule | None:
    """The rule sending the retry after `verdict` under the answer-only grammar, if one
    does. `words_fallback`: after a forced or unsure call, a stand-in, or a made-up value
    after an earlier doubt, the user most likely asked for what no tool does (a grammar
    helps a small model more than an instruction it would repeat). `repeat_to_words`: a
    model repeating answered calls has every result, and would misuse the other tools."""
    settings, after = turn.opening.settings, traits(verdict.reason)
    rules = settings.policy.rules
    auto_grammar = turn.opening.policy.model_decides and settings.grammar_available
    doubted = any(traits(r.reason).doubtful for r in turn.report.retries)
    made_up = after.made_up_value and auto_grammar and doubted
    if rules.on("words_fallback") and (after.to_words or made_up):
        return "words_fallback"
    if after.repeats and auto_grammar and rules.on("repeat_to_words"):
        return "repeat_to_words"
    return None


def _away_from_repeats(turn: TurnState, attempt: Attempt) -> ResponseFormat | None:
    """The retry's grammar, leaving out the tools the model keeps repeating (under `auto`
    with none left, an answer only)."""
    opening, grammar = turn.opening, turn.next.response_format
    settings, policy, request = opening.settings, opening.policy, opening.request
    if not settings.grammar_available or policy.tool is not None:
        return grammar
    repeated = repeated_names(attempt.issues)
    if others := tuple(t for t in opening.contract.tools if t.name not in repeated):
        return settings.grammar(others, request)
    if policy.model_decides:
        return words_format(request, settings.options.action_format)
    return grammar


def _release(turn: TurnState, attempt: Attempt, can_retry: bool) -> Judgement:
    """The attempt whose events go out, or none (the reply was dropped)."""
    opening, calls = turn.opening, attempt.parsed.calls
    rules, auto = opening.settings.policy.rules, opening.policy.model_decides
    if (repeated := own_words(turn, attempt)) and rules.on("echo_filter"):
        # Parlay's instructions, echoed, are no answer: the user should not read them.
        return _dropped("echo_filter", f"dropped a reply that only repeated {repeated}")
    repeats = auto and only_repeats(calls, attempt.issues)
    if not can_retry and repeats and rules.on("repeat_to_words"):
        # No grammar kept the last try to words: a repeat handed on loops a tool runner.
        return _dropped("repeat_to_words", "dropped a last reply that only repeated answered calls")
    fired, notes = list[str](), list[str]()
    last_call = not can_retry and opening.read_confidence and calls
    if last_call and (forced := forced_choice(opening, attempt)):
        notes.append(f"kept a call the grammar forced (no retry left): {forced.describe()}")
    if attempt.duplicates:
        fired.append("duplicate_calls")
    if auto and rules.on("repeat_beside_new") and (dropped := _drop_repeats_beside_new(attempt)):
        fired.append("repeat_beside_new")
        notes.append(f"dropped {dropped} call(s) repeating answered ones beside new calls")
    return Judgement(released=attempt, fired=tuple(fired), notes=tuple(notes))


def _dropped(rule: str, note: str) -> Judgement:
    return Judgement(fired=(rule,), notes=(note,), dropped=True)


def _drop_repeats_beside_new(released: Attempt) -> int:
    """Calls repeating answered ones leave a reply that makes new calls as well: their
    results are in the history, and a tool that acts would act twice. How many went."""
    repeats = repeated_ids(released.issues)
    if not repeats or released.emitted_calls <= len(repeats):
        return 0
    return released.drop_held(repeats)


def _unsure_share(turn: TurnState) -> float | None:
    """The first reply's share of weight on answering, when it leaves calling less than
    `min_call_confidence` (see `leaning`); None otherwise, and after a tool result."""
    threshold, share = turn.opening.settings.min_call_confidence, turn.report.answer_share
    first = turn.opening.contract.state is ToolState.FIRST_DECISION
    if not threshold or turn.report.retries or not first:
        return None
    return share if leans_to_words(share, 1 - threshold) else None


def forced_choice(opening: Opening, attempt: Attempt) -> NameChoice | None:
    """The first call, when every call of the reply was forced on the model by the
    grammar (`checks.confidence.name_choices` below `min_call_confidence`); a reply that
    also makes a call of its own choosing stands."""
    calls, least = attempt.parsed.calls, opening.settings.min_call_confidence
    choices = name_choices(attempt.tokens, calls, [spec.name for spec in opening.contract.tools])
    forced = calls and len(choices) == len(calls) and all(c.share < least for c in choices)
    return choices[0] if forced else None


def own_words(turn: TurnState, attempt: Attempt) -> str:
    """What of parlay's own a plain reply, not yet shown, only repeats ("" if nothing):
    a stand-in of the format instructions, the retry message it answers, or the words
    of the continuation around the tool results, copied."""
    text = attempt.parsed.text
    if attempt.parsed.calls or attempt.shown_text:
        return ""
    if is_placeholder(text):
        return "a stand-in of the format instructions"
    if is_debris(text):
        return "no words, only punctuation or an action's syntax"
    if (instruction := turn.next.instruction) and echoes(text, instruction):
        return "the retry message"
    if turn.opening.own_words.repeated_by(text) or attempt.trim.took_all:
        return "the continuation's instructions"
    return ""


def named_tool(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    """The first tool whose name a plain reply writes (as a word of its own)."""
    return next(
        (t for t in tools if re.search(rf"(?<![\w.]){re.escape(t.name)}(?![\w])", text)), None
    )
