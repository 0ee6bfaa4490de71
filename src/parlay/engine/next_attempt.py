"""What the prompted engine sends next after a verdict: the messages and the grammar.

Most retries add the reply and an instruction naming what was wrong. Some change more:
a made-up value or a quoted made-up result is asked again without the few-shot examples
(they taught it); a call repeating an answered one is held to the other tools; and after
a doubt about the turn, the answer-only grammar takes over (`words_fallback`).
"""

from __future__ import annotations

import logging

from attrs import evolve

from parlay.context import AssistantMessage, UserMessage
from parlay.diagnostics import RetryRecord
from parlay.engine.attempt import Attempt
from parlay.engine.checks.retry import Verdict
from parlay.engine.checks.retry_message import retry_instruction
from parlay.engine.checks.rules import VerdictReason
from parlay.engine.contract.constrain import action_response_format, final_schema
from parlay.engine.contract.parser import ParseResult
from parlay.engine.contract.pieces import ActionFormat
from parlay.engine.contract.render import render_contract
from parlay.engine.settings import EngineSettings
from parlay.engine.turn import Turn
from parlay.request import NONE, ChatRequest, ResponseFormat, ToolSpec

logger = logging.getLogger("parlay.prompted")

# Retry reasons for a call carrying a value the conversation did not give.
MADE_UP_VALUES: tuple[VerdictReason, ...] = ("example_value", "invented_value")
# Earlier retries after which a made-up value means the turn has nothing real to call with.
DOUBTFUL: tuple[VerdictReason, ...] = (
    *MADE_UP_VALUES,
    "example_answer",
    "pretended_call",
    "forced_call",
    "unsure_call",
)


def words_format(request: ChatRequest, action_format: ActionFormat) -> ResponseFormat:
    """The grammar of an answer in words: the caller's format if any, else plain text in
    the format's answer shape."""
    only = ResponseFormat(final_schema(action_format), name="final", strict=True)
    return request.response_format or only


def grammar_for(
    settings: EngineSettings, tools: tuple[ToolSpec, ...], request: ChatRequest
) -> ResponseFormat | None:
    """The grammar of a reply calling one of `tools` or, under `auto`, answering: in the
    caller's own format (`response_format`) when the request has one."""
    answer = request.response_format.schema if request.response_format else None
    return action_response_format(
        tools,
        request.tool_choice,
        settings.options.action_format,
        answer=answer,
        parallel=request.parallel_tool_calls,
        listed=settings.options.listed_calls,
    )


def wants_words(
    settings: EngineSettings, turn: Turn, attempt: Attempt, parsed: ParseResult, attempt_no: int
) -> bool:
    """Under tool_choice="none", whether a reply left no text of its own (only calls,
    nothing, or parlay's words echoed): such a turn must still end in text."""
    return (
        not turn.policy.may_call
        and (not parsed.text.strip() or attempt.trim.took_all)
        and turn.policy.budget_left(attempt_no)
    )


def ask_for_words(
    settings: EngineSettings, turn: Turn, attempt: Attempt, parsed: ParseResult
) -> None:
    """Ask again for words. A reply that echoed the instruction, or the last try, goes
    under the answer-only grammar where there is one, rather than see it again."""
    echo = attempt.trim.took_all
    if echo:
        turn.fired.append("echo_filter")
        turn.notes.append("dropped a reply that only repeated the instruction not to call")
    turn.fired.append("words_only")
    turn.retries.append(RetryRecord("words_only", ", ".join(c.name for c in parsed.calls)))
    last = len(turn.retries) >= settings.policy.max_retries
    if settings.grammar_available and (last or echo):
        answer_only(settings, turn)
        return
    turn.instruction = retry_instruction(
        "words_only", "", len(turn.retries), turn.contract.tools, turn.choice, settings.options
    )
    reply = AssistantMessage("".join(attempt.raw))
    turn.messages = (*turn.messages, reply, UserMessage(turn.instruction))


def answer_only(settings: EngineSettings, turn: Turn) -> None:
    """The next attempt under the answer-only grammar: the conversation rendered as under
    tool_choice="none", with no examples and no instruction (models copy both)."""
    words = turn.request.replace(tool_choice=NONE)
    plain = evolve(settings.options, few_shot=False)
    turn.messages = render_contract(words, plain, constrained=True).messages
    turn.response_format = words_format(turn.request, settings.options.action_format)
    turn.instruction = ""


def retry(settings: EngineSettings, turn: Turn, verdict: Verdict, attempt: Attempt) -> None:
    """Set the turn up for the attempt after `verdict`."""
    turn.fired.append(verdict.reason)
    turn.retries.append(RetryRecord(verdict.reason, verdict.detail))
    to_words = falls_back_to_words(settings, turn, verdict)
    if to_words:
        turn.fired.append("words_fallback")
    elif repeat_in_words(settings, turn, verdict):
        to_words = True
        turn.fired.append("repeat_to_words")
    logger.info(
        "retry %d/%d: %s %s",
        len(turn.retries),
        settings.policy.max_retries,
        verdict.reason,
        verdict.detail,
    )
    if to_words:
        answer_only(settings, turn)
    else:
        _ask_again(settings, turn, verdict, attempt)
    turn.shown_text = turn.shown_text or attempt.shown_text


def _ask_again(settings: EngineSettings, turn: Turn, verdict: Verdict, attempt: Attempt) -> None:
    request = turn.request
    if verdict.reason == "repeated_call":
        turn.response_format = away_from_repeats(settings, turn, attempt)
    elif verdict.reason == "pretended_call" and verdict.tool is not None and turn.constrained:
        # The model wrote a made-up result for this tool: it may call it, or answer.
        turn.response_format = grammar_for(settings, (verdict.tool,), request)
    turn.instruction = retry_instruction(
        verdict.reason,
        verdict.detail,
        len(turn.retries),
        turn.contract.tools,
        turn.choice,
        settings.options,
        verdict.tool,
        constrained=turn.constrained,
        argument=verdict.argument,
        parallel=turn.policy.parallel,
    )
    if verdict.reason not in (*MADE_UP_VALUES, "example_answer", "pretended_call"):
        reply = AssistantMessage("".join(attempt.raw))
        turn.messages = (*turn.messages, reply, UserMessage(turn.instruction))
        return
    # The examples taught the made-up value or result: ask again without them and without
    # the reply, so nothing is left to copy.
    plain = evolve(settings.options, few_shot=False)
    fresh = render_contract(request, plain, constrained=turn.constrained).messages
    turn.messages = (*fresh, UserMessage(turn.instruction))


# Verdicts after which the model most likely answers best in words: the grammar forced
# its call, it was unsure of calling, or it wrote a stand-in.
WORDS_AFTER: tuple[VerdictReason, ...] = ("forced_call", "unsure_call", "placeholder_answer")


def falls_back_to_words(settings: EngineSettings, turn: Turn, verdict: Verdict) -> bool:
    """Whether the retry after `verdict` goes under the answer-only grammar: after a
    forced or unsure call, a stand-in answer, or a made-up value after an earlier doubt
    in this turn. The user most likely asked for what no tool does; a grammar for
    words helps a small model more than an instruction, whose words it would repeat."""
    if not settings.rules.on("words_fallback"):
        return False
    if verdict.reason in WORDS_AFTER:
        return True
    return (
        verdict.reason in MADE_UP_VALUES
        and turn.policy.model_decides
        and settings.grammar_available
        and any(r.reason in DOUBTFUL for r in turn.retries[:-1])
    )


def repeat_in_words(settings: EngineSettings, turn: Turn, verdict: Verdict) -> bool:
    """Whether the try after a repeat of answered calls goes under the answer-only
    grammar (under `auto`, with a grammar): a model repeating calls has every result
    it needs, and held to the other tools it would misuse them."""
    return (
        verdict.reason == "repeated_call"
        and turn.policy.model_decides
        and settings.grammar_available
        and settings.rules.on("repeat_to_words")
    )


def away_from_repeats(
    settings: EngineSettings, turn: Turn, attempt: Attempt
) -> ResponseFormat | None:
    """A grammar for the retry that leaves out the tools the model keeps repeating
    (under `auto` with none left, an answer only)."""

    current = turn.response_format
    if not settings.grammar_available or turn.policy.tool is not None:
        return current
    repeated = {i.call.name for i in attempt.issues if i.kind == "repeated_call"}
    others = tuple(t for t in turn.contract.tools if t.name not in repeated)
    if others:
        return grammar_for(settings, others, turn.request)
    if turn.policy.model_decides:
        return words_format(turn.request, settings.options.action_format)
    return current
