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
from parlay.engine.checks.placeholders import is_debris, is_placeholder
from parlay.engine.checks.refusal import RefusalSignal, asks_user, detect_refusal
from parlay.engine.checks.retry import Reply, Verdict, only_repeats
from parlay.engine.contract.grounding import copied_answer, echoes
from parlay.engine.contract.parser import ParseResult
from parlay.engine.contract.state import ToolState
from parlay.engine.turn import Turn
from parlay.request import ToolSpec


def verdict_on(
    turn: Turn, attempt: Attempt, parsed: ParseResult, can_retry: bool
) -> Verdict | None:
    """Why the attempt should be retried, or None: it is released."""
    signal = detect_refusal(parsed.text, turn.settings.refusal_phrases)
    if signal is not None and signal.kind == "soft" and asks_user(parsed.text):
        # "Which city? I can't check the weather without one." asks for what a tool
        # needs: the right reply, not a claim that no tool could help.
        signal = None
    turn.refusal = turn.refusal or signal
    if not can_retry:
        return None
    verdict = turn.settings.policy.judge(_reply(turn, attempt, parsed, signal))
    if verdict is not None and verdict.about_text and attempt.shown_text:
        turn.notes.append(f"not retried ({verdict.reason}): the text was already shown")
        return None
    return verdict


def _reply(
    turn: Turn, attempt: Attempt, parsed: ParseResult, signal: RefusalSignal | None
) -> Reply:
    """What the policy's checks judge of the reply, gathered here."""
    settings, contract, text = turn.settings, turn.contract, parsed.text
    copied = copied_answer(text, contract.example_answers) if settings.check_values else ""
    return Reply(
        calls=parsed.calls,
        issues=attempt.issues,
        problems=parsed.problems,
        choice=turn.choice,
        tools=contract.tools,
        text=text,
        refusal=signal,
        copied_answer=copied,
        pretended_tool=named_tool(text, contract.tools) if copied else None,
        forced=forced_choice(turn, attempt, parsed.calls) if turn.read_names else None,
        placeholder=is_placeholder(text) or is_debris(text),
        unsure=_unsure_share(turn),
        earlier=tuple(record.reason for record in turn.retries),
    )


def to_release(
    turn: Turn, attempt: Attempt, parsed: ParseResult, can_retry: bool
) -> Attempt | None:
    """The attempt whose events go out (None: nothing does, the reply was dropped)."""
    rules = turn.settings.rules
    repeated = own_words(turn, attempt, parsed)
    if repeated and rules.on("echo_filter"):
        # Parlay's instructions, echoed, are no answer: the user should not read them.
        _drop(turn, "echo_filter", f"dropped a reply that only repeated {repeated}")
        return None
    repeats = turn.policy.model_decides and only_repeats(parsed.calls, attempt.issues)
    if not can_retry and repeats and rules.on("repeat_to_words"):
        # No grammar kept the last try to words: a repeat handed on loops a tool runner.
        _drop(turn, "repeat_to_words", "dropped a last reply that only repeated answered calls")
        return None
    last_call = not can_retry and turn.read_names and parsed.calls
    if last_call and (forced := forced_choice(turn, attempt, parsed.calls)):
        turn.notes.append(f"kept a call the grammar forced (no retry left): {forced.describe()}")
    if attempt.duplicates:
        turn.fired.append("duplicate_calls")
    if turn.policy.model_decides and rules.on("repeat_beside_new"):
        _drop_repeats_beside_new(turn, attempt)
    return attempt


def _drop(turn: Turn, rule: str, note: str) -> None:
    turn.fired.append(rule)
    turn.notes.append(note)
    turn.dropped = True


def _drop_repeats_beside_new(turn: Turn, released: Attempt) -> None:
    """Calls repeating answered ones leave a reply that makes new calls as well: their
    results are in the history, and a tool that acts would act twice."""
    repeats = {issue.call.id for issue in released.issues if issue.kind == "repeated_call"}
    if not repeats or released.emitted_calls <= len(repeats):
        return
    if dropped := released.drop_held(repeats):
        turn.fired.append("repeat_beside_new")
        turn.notes.append(f"dropped {dropped} call(s) repeating answered ones beside new calls")


def _unsure_share(turn: Turn) -> float | None:
    """The first reply's share of weight on answering, when it leaves calling less than
    `min_call_confidence` (see `leaning`); None otherwise, and after a tool result."""
    threshold = turn.settings.min_call_confidence
    first = turn.contract.state is ToolState.FIRST_DECISION
    if not threshold or turn.retries or not first:
        return None
    return turn.answer_share if leans_to_words(turn.answer_share, 1 - threshold) else None


def forced_choice(turn: Turn, attempt: Attempt, calls: Sequence[ToolCall]) -> NameChoice | None:
    """The first call, when every call of the reply was forced on the model by the
    grammar (see `forced`); a reply that also makes a call of its own choosing stands."""
    names = [spec.name for spec in turn.contract.tools]
    choices = name_choices(attempt.tokens, calls, names)
    if not calls or len(choices) != len(calls):
        return None
    if all(choice.share < turn.settings.min_offered_share for choice in choices):
        return choices[0]
    return None


def own_words(turn: Turn, attempt: Attempt, parsed: ParseResult) -> str:
    """What of parlay's own a plain reply, not yet shown, only repeats ("" if nothing):
    a stand-in of the format instructions, the retry message it answers, or the words
    of the continuation around the tool results, as written or reworded."""
    text = parsed.text
    if parsed.calls or attempt.shown_text:
        return ""
    if is_placeholder(text):
        return "a stand-in of the format instructions"
    if is_debris(text):
        return "no words, only punctuation or an action's syntax"
    if turn.instruction and echoes(text, turn.instruction):
        return "the retry message"
    if turn.own_words.repeated_by(text, cut=attempt.cut_by_limit) or attempt.trim.took_all:
        return "the continuation's instructions"
    return ""


def named_tool(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    """The first tool whose name a plain reply writes (as a word of its own)."""
    return next(
        (t for t in tools if re.search(rf"(?<![\w.]){re.escape(t.name)}(?![\w])", text)), None
    )
