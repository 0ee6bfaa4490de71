"""One request through the prompted engine: what passes from one attempt to the next
(the next messages and grammar, the retries, the rules that acted, the notes), and the
closing `Finish` with its `Diagnostics`."""

from __future__ import annotations

from attrs import Factory, define

from parlay.context import Message
from parlay.diagnostics import Diagnostics, RetryRecord
from parlay.engine.attempt import Attempt
from parlay.engine.checks.own_words import OwnWords
from parlay.engine.checks.refusal import RefusalSignal
from parlay.engine.contract.parser import ParseResult
from parlay.engine.contract.pieces import ActionFormat
from parlay.engine.contract.render import Contract
from parlay.engine.policy import StreamingMode, TurnPolicy
from parlay.events import Finish, FinishReason, Usage
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice, ToolSpec


@define
class Turn:
    """The state of one request while the engine works on it."""

    request: ChatRequest
    policy: TurnPolicy
    contract: Contract
    constrained: bool
    # Whether the engine reads the model's choice of tool names (`parlay.engine.checks.forced`).
    read_names: bool
    # What the next attempt sends: the messages, the grammar, the options.
    messages: tuple[Message, ...]
    response_format: ResponseFormat | None
    options: GenerationOptions
    # Calls the history already answered (`checks.answered_calls`), read once.
    answered: frozenset[tuple[str, str]] = frozenset()
    retries: list[RetryRecord] = Factory(list)
    fired: list[str] = Factory(list)  # the rules that acted, in order (`Diagnostics.rules`)
    notes: list[str] = Factory(list)
    modes: list[StreamingMode] = Factory(list)
    usage: Usage | None = None
    # An attempt ended without a count (the guard closed its stream before the server
    # sent one): the sum of the others would pass for the whole, so the turn has none.
    uncounted: bool = False
    refusal: RefusalSignal | None = None
    emitted_calls: int = 0
    yielded: int = 0
    shown_text: bool = False
    instruction: str = ""  # the message the last retry added
    # parlay's own words in the continuation the model answers (`continuation_words`).
    own_words: OwnWords = Factory(OwnWords)
    last_finish: Finish | None = None
    repetition: str | None = None  # what a looping attempt repeated
    dropped: bool = False  # the last reply only repeated parlay's own words
    withheld: str = ""  # the last reply the echo trim took out whole, as written
    answer_share: float | None = None  # the first reply's lean to words (`leaning`)
    cut_call: bool = False  # the last attempt stopped at its limit inside a call

    @property
    def choice(self) -> ToolChoice:
        return self.request.tool_choice

    @property
    def specs(self) -> dict[str, ToolSpec]:
        return {spec.name: spec for spec in self.contract.tools}

    def add_usage(self, finish: Finish) -> None:
        self.last_finish = finish
        if finish.usage is None:
            self.uncounted = True
        else:
            self.usage = finish.usage if self.usage is None else self.usage + finish.usage

    def take_rules_of(self, finish: Finish) -> None:
        """The rules that acted in a request this turn made of its own (the words asked
        for after a dropped reply), and what they noted; each rule named once."""
        if finish.diagnostics is None:
            return
        self.fired.extend(r for r in finish.diagnostics.rules if r not in self.fired)
        self.notes.extend(finish.diagnostics.notes)

    def record(self, attempt: Attempt, parsed: ParseResult) -> None:
        """What an attempt noted, what it cost, and how it ended."""
        self.notes.extend(attempt.notes)
        if attempt.trim.dropped and attempt.trim.shown_any:
            # (A reply with nothing else is dropped whole, and named so, by the judging.)
            self.fired.append("echo_filter")
        elif attempt.trim.took_all:
            self.withheld = "".join(attempt.trim.dropped).strip()
        self.notes.extend(f"{p.kind}: {p.detail}" for p in parsed.problems)
        finish = attempt.finish
        if finish is None:
            return
        cut = any(problem.kind == "cut_off" for problem in parsed.problems)
        self.cut_call = cut and attempt.cut_by_limit
        self.add_usage(finish)
        looped = finish.diagnostics.repetition if finish.diagnostics else None
        if looped and finish.diagnostics is not None:
            self.repetition = looped
            self.notes.extend(finish.diagnostics.notes)
        elif finish.reason == "length":
            self.notes.append("the reply was cut by the token limit")

    def finish(self, action_format: ActionFormat) -> Finish:
        """The closing event: why the reply ended, its usage, and what the engine did."""
        reason: FinishReason = "tool_calls" if self.emitted_calls else "stop"
        if self.emitted_calls and self.cut_call:
            reason = "length"  # a client must not take a cut call for a whole one
        last = self.last_finish
        if not self.emitted_calls and last is not None and last.reason != "tool_calls":
            reason = last.reason
        diagnostics = Diagnostics(
            contract_injected=True,
            action_format=action_format,
            tool_history_detected=self.contract.tool_history,
            calls_parsed=self.emitted_calls,
            retries=tuple(self.retries),
            refusal=f"{self.refusal.kind}: {self.refusal.phrase}" if self.refusal else None,
            constrained=self.constrained,
            notes=tuple(self.notes),
            tool_state=self.contract.state.value,
            streaming="/".join(self.modes),
            repetition=self.repetition,
            rules=tuple(self.fired),
            answer_share=self.answer_share,
        )
        return Finish(
            reason,
            None if self.uncounted else self.usage,
            raw=last.raw if last else None,
            diagnostics=diagnostics,
            model=last.model if last else None,
        )
