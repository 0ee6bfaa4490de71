"""How the prompted engine judges an attempt: whether to ask again, and what to release.

The retry policy (`parlay.engine.checks.retry`) gives the verdict; this module gathers what
its checks read (a refusal, a copied answer, a call the grammar forced, how sure the
model was of calling) and applies the rules that act after it: a reply repeating
parlay's own words is dropped (`echo_filter`), and so are repeats of answered calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from parlay.context import ToolCall
from parlay.engine.attempt import Attempt
from parlay.engine.checks.forced import NameChoice, name_choices
from parlay.engine.checks.leaning import leans_to_words
from parlay.engine.checks.own_words import OwnWords
from parlay.engine.checks.placeholders import is_debris, is_placeholder
from parlay.engine.checks.refusal import RefusalSignal, asks_user, detect_refusal
from parlay.engine.checks.retry import Reply, Verdict, only_repeats
from parlay.engine.contract.grounding import copied_answer, echoes
from parlay.engine.contract.parser import ParseResult
from parlay.engine.contract.state import ToolState
from parlay.engine.settings import EngineSettings
from parlay.engine.turn import Turn
from parlay.request import ToolSpec


def refusal_in(settings: EngineSettings, text: str) -> RefusalSignal | None:
    signal = detect_refusal(text, settings.refusal_phrases)
    if signal is not None and signal.kind == "soft" and asks_user(text):
        # "Which city? I can't check the weather without one." asks for what a tool
        # needs: the right reply, not a claim that no tool could help.
        return None
    return signal


def verdict_on(
    settings: EngineSettings, turn: Turn, attempt: Attempt, parsed: ParseResult, can_retry: bool
) -> Verdict | None:
    """Why the attempt should be retried, or None: it is released."""
    signal = refusal_in(settings, parsed.text)
    turn.refusal = turn.refusal or signal
    if not can_retry:
        return None
    verdict = settings.policy.judge(_reply(settings, turn, attempt, parsed, signal))
    if verdict is not None and verdict.about_text and attempt.shown_text:
        turn.notes.append(f"not retried ({verdict.reason}): the text was already shown")
        return None
    return verdict


def _reply(
    settings: EngineSettings,
    turn: Turn,
    attempt: Attempt,
    parsed: ParseResult,
    signal: RefusalSignal | None,
) -> Reply:
    """What the policy's checks judge of the reply, gathered here."""
    contract = turn.contract
    copied = copied_answer(parsed.text, contract.example_answers) if settings.check_values else ""
    forced = forced_choice(settings, attempt, parsed.calls, turn) if turn.read_names else None
    return Reply(
        calls=parsed.calls,
        issues=attempt.issues,
        problems=parsed.problems,
        choice=turn.choice,
        tools=contract.tools,
        text=parsed.text,
        refusal=signal,
        copied_answer=copied,
        pretended_tool=named_tool(parsed.text, contract.tools) if copied else None,
        forced=forced,
        placeholder=is_placeholder(parsed.text) or is_debris(parsed.text),
        unsure=unsure_share(settings, turn),
        earlier=tuple(record.reason for record in turn.retries),
    )


def to_release(
    settings: EngineSettings, turn: Turn, attempt: Attempt, parsed: ParseResult, can_retry: bool
) -> Attempt | None:
    """The attempt whose events go out (None: nothing does, the reply was dropped)."""
    repeated = own_words(attempt, parsed, turn.instruction, turn.own_words)
    if repeated and settings.rules.on("echo_filter"):
        turn.fired.append("echo_filter")
        # Parlay's instructions, echoed, are no answer: the user should not read them.
        turn.notes.append(f"dropped a reply that only repeated {repeated}")
        turn.dropped = True
        return None
    if not can_retry and repeats_to_drop(settings, turn, attempt, parsed):
        # No grammar kept the last try to words: a repeat handed on loops a tool runner.
        turn.fired.append("repeat_to_words")
        turn.notes.append("dropped a last reply that only repeated answered calls")
        turn.dropped = True
        return None
    last_call = not can_retry and turn.read_names and parsed.calls
    if last_call and (forced := forced_choice(settings, attempt, parsed.calls, turn)):
        turn.notes.append(f"kept a call the grammar forced (no retry left): {forced.describe()}")
    if attempt.duplicates:
        turn.fired.append("duplicate_calls")
    drop_repeats_beside_new(settings, turn, attempt)
    return attempt


def drop_repeats_beside_new(settings: EngineSettings, turn: Turn, released: Attempt) -> None:
    """Under `auto`, calls repeating answered ones leave a reply that makes new calls as
    well: their results are in the history, and a tool that acts would act twice."""
    if not turn.policy.model_decides or not settings.rules.on("repeat_beside_new"):
        return
    repeats = {issue.call.id for issue in released.issues if issue.kind == "repeated_call"}
    if not repeats or released.emitted_calls <= len(repeats):
        return
    if dropped := released.drop_held(repeats):
        turn.fired.append("repeat_beside_new")
        turn.notes.append(f"dropped {dropped} call(s) repeating answered ones beside new calls")


def repeats_to_drop(
    settings: EngineSettings, turn: Turn, attempt: Attempt, parsed: ParseResult
) -> bool:
    """Whether every call of the reply repeats one the history answered, under `auto`."""
    return (
        turn.policy.model_decides
        and only_repeats(parsed.calls, attempt.issues)
        and settings.rules.on("repeat_to_words")
    )


def unsure_share(settings: EngineSettings, turn: Turn) -> float | None:
    """The first reply's share of weight on answering, when it leaves calling less than
    `min_call_confidence` (see `leaning`); None otherwise, and after a tool result."""

    threshold = settings.min_call_confidence
    first = turn.contract.state is ToolState.FIRST_DECISION
    if not threshold or turn.retries or not first:
        return None
    share = turn.answer_share
    return share if leans_to_words(share, 1 - threshold) else None


def forced_choice(
    settings: EngineSettings, attempt: Attempt, calls: Sequence[ToolCall], turn: Turn
) -> NameChoice | None:
    """The first call, when every call of the reply was forced on the model by the
    grammar (see `forced`); a reply that also makes a call of its own choosing stands."""
    names = [spec.name for spec in turn.contract.tools]
    choices = name_choices(attempt.tokens, calls, names)
    if not calls or len(choices) != len(calls):
        return None
    if all(choice.share < settings.min_offered_share for choice in choices):
        return choices[0]
    return None


def own_words(
    attempt: Attempt, parsed: ParseResult, instruction: str, continuation: OwnWords
) -> str:
    """What of parlay's own a plain reply, not yet shown, only repeats ("" if nothing):
    a stand-in of the format instructions, the retry message it answers, or the words
    of the continuation around the tool results, as written or reworded."""
    if parsed.calls or attempt.shown_text:
        return ""
    if is_placeholder(parsed.text):
        return "a stand-in of the format instructions"
    if is_debris(parsed.text):
        return "no words, only punctuation or an action's syntax"
    if instruction and echoes(parsed.text, instruction):
        return "the retry message"
    if continuation.repeated_by(parsed.text, cut=attempt.cut_by_limit) or attempt.trim.took_all:
        return "the continuation's instructions"
    return ""


def named_tool(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    """The first tool whose name a plain reply writes (as a word of its own)."""
    return next(
        (t for t in tools if re.search(rf"(?<![\w.]){re.escape(t.name)}(?![\w])", text)), None
    )
