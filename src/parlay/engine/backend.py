"""Tool calling for models without it: the prompt-contract engine as a `Backend`.

`PromptedBackend(inner)` renders the contract, parses the inner model's text as it streams,
repairs calls and asks again (bounded) when a reply fails a check. No event of a reply
that is then discarded goes out: each attempt streams in the mode `TurnPolicy.streaming`
gives it (`Diagnostics.streaming`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, NoReturn, TypeVar, cast

from attrs import evolve

from parlay.backends._http import schema_rejected
from parlay.backends.base import Backend, Capabilities
from parlay.backends.bounds import guarded
from parlay.backends.offered import allowed_calls_only
from parlay.backends.tokens import TokenCount, count_tokens
from parlay.backends.window import context_window
from parlay.context import Message
from parlay.engine.checks.results_answer import results_answer
from parlay.engine.checks.rules import unknown_rules
from parlay.engine.config import EngineChanges, EngineConfig
from parlay.engine.contract.fit import Budget, fit, reply_reserve
from parlay.engine.contract.images import text_only
from parlay.engine.contract.render import render_contract
from parlay.engine.contract.state import has_tool_activity
from parlay.engine.judging import judge
from parlay.engine.settings import EngineSettings, engine_settings
from parlay.engine.turn import NAME_ALTERNATIVES, TurnState, open_turn
from parlay.errors import BackendStatusError, ConfigurationError
from parlay.events import Event, Finish, TextDelta
from parlay.reasoning import split_reasoning
from parlay.request import NONE, ChatRequest

logger = logging.getLogger("parlay.prompted")

__all__ = ["NAME_ALTERNATIVES", "PromptedBackend", "behind_engine"]
T = TypeVar("T")


def _setting(read: Callable[[EngineSettings], T]) -> T:
    """A read-only property of `PromptedBackend`, read from its `EngineSettings` (and
    typed as what it reads)."""

    def fixed(engine: PromptedBackend, value: object) -> NoReturn:
        raise AttributeError("a PromptedBackend's settings are fixed: see configure()")

    return cast(T, property(lambda engine: read(engine.settings), fixed))


class PromptedBackend:
    """Wraps any `Backend` and gives it tool calling through a prompt contract.

    Its settings are one `EngineConfig` (`parlay.engine.config`, where each is
    described): pass one as `config`, its fields by name
    (`PromptedBackend(inner, max_retries=1)`), or both (the names change the config). A
    value out of range is a `ConfigurationError` when the config is made.
    """

    def __init__(self, inner: Backend, config: EngineConfig | None = None, **fields: Any) -> None:
        self.config = evolve(config or EngineConfig(), **fields)
        self.settings = engine_settings(inner, self.config)
        self.inner = inner
        # Set once the inner backend refuses the grammar: this engine without it.
        self._unconstrained: PromptedBackend | None = None
        self._refusal = ""

    # What the settings hold, read as the backend's own (`backend.action_format`).
    options = _setting(lambda s: s.options)
    policy = _setting(lambda s: s.policy)
    rules = _setting(lambda s: s.policy.rules)
    action_format = _setting(lambda s: s.options.action_format)
    max_retries = _setting(lambda s: s.policy.max_retries)
    min_call_confidence = _setting(lambda s: s.min_call_confidence)
    check_values = _setting(lambda s: s.check_values)
    grammar_available = _setting(lambda s: s.grammar_available)
    max_tokens = _setting(lambda s: s.max_tokens)

    @property
    def constrained(self) -> bool | None:
        """As configured (None: a grammar when the inner backend takes one)."""
        return self.config.constrained

    def configure(self, changes: EngineChanges | None = None, **fields: Any) -> PromptedBackend:
        """A copy with some settings changed (same inner backend): `changes` from a
        command line, or `EngineConfig` fields by name. `rules_off` and `rules_on` switch
        rules from those of this engine."""
        fields = {**(changes.given() if changes else {}), **fields}
        checks = fields.get("checks", self.config.checks)
        switched_on = tuple(fields.pop("rules_on", ()))
        if unknown := unknown_rules(switched_on, [check.name for check in checks]):
            raise ConfigurationError(f"unknown rule(s) {', '.join(unknown)} in rules_on")
        # The rules as they are, then switched as asked (not rebuilt from the defaults).
        rules = self.rules.switched(
            off=fields.pop("rules_off", ()),
            on=switched_on,
            values=fields.pop("check_values", None),
        )
        config = evolve(self.config, **fields, rules_off=rules.off, check_values=None)
        return PromptedBackend(self.inner, config)

    @property
    def name(self) -> str:
        return f"prompted:{self.inner.name}"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(native_tools=True, json_schema=self.inner.capabilities.json_schema)

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """The tokens of the rendered contract the inner model is sent for `request`."""
        request = text_only(request, self.options)
        if not request.tools and not has_tool_activity(request.messages):
            return await count_tokens(self.inner, request)
        constrained = self.settings.uses_constraint(request)
        contract = render_contract(request, self.options, constrained=constrained)
        return await count_tokens(self.inner, ChatRequest(contract.messages))

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        # Retries spent, a call to a tool not offered becomes a plain answer naming it.
        return allowed_calls_only(self._stream(request), request)

    async def _stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        request = text_only(request, self.options)  # the inner model reads text only
        if not request.tools and not has_tool_activity(request.messages):
            events = split_reasoning(self.inner.stream(request))  # <think> is not answer
        elif self._unconstrained is not None:  # the backend refused the grammar before
            events = _noted(self._unconstrained._stream(request), self._refusal)
        else:
            events = self._turn(request)
        async for event in events:
            yield event

    async def _turn(self, request: ChatRequest) -> AsyncIterator[Event]:
        """One request through the contract: fitted, attempted, closed."""
        fitted, settings, shrunk = await self._fitted(request)
        turn = open_turn(settings, fitted)
        try:
            async for out in self._attempts(turn):
                turn.shown_any = True
                yield out
        except BackendStatusError as exc:
            if not self._grammar_refused(turn, exc):
                raise
            async for out in _noted(self._without_grammar(exc)._stream(request), self._refusal):
                yield out
            return
        async for out in self._closing(turn, fitted):
            turn.shown_any = True
            yield out
        finish = turn.finish()
        if shrunk and finish.diagnostics is not None:
            finish = evolve(finish, diagnostics=evolve(finish.diagnostics, shrunk=shrunk))
        logger.debug("prompted reply: %s", finish.diagnostics)
        yield finish

    def _grammar_refused(self, turn: TurnState, exc: BackendStatusError) -> bool:
        """Whether to go on without the grammar: only when the server rejected the schema
        itself, nothing was shown and the caller did not insist on it."""
        rejected = turn.opening.constrained and schema_rejected(exc)
        return rejected and not turn.shown_any and not self.constrained

    def _without_grammar(self, exc: BackendStatusError) -> PromptedBackend:
        """This engine without the grammar, from now on: the backend is not asked for a
        grammar it refused again (one extra request for the life of this object, one
        warning in the log)."""
        self._refusal = (
            f"the backend rejected the action schema (HTTP {exc.status_code}); "
            "this and every later request run unconstrained"
        )
        logger.warning("%s", self._refusal)
        self._unconstrained = self.configure(constrained=False)
        return self._unconstrained

    async def _fitted(
        self, request: ChatRequest
    ) -> tuple[ChatRequest, EngineSettings, tuple[str, ...]]:
        """`request` and the settings it is rendered with, shrunk to the inner model's
        window where it is known (`contract.fit`), and what was shrunk; raises
        `ContextWindowExceeded` when nothing more can go."""
        window = await context_window(self.inner)
        if window is None:
            return request, self.settings, ()
        inner = self.inner

        async def count(messages: Sequence[Message]) -> TokenCount:
            return await count_tokens(inner, ChatRequest(tuple(messages)))

        reserve = reply_reserve(request, self.settings.max_tokens, window.tokens)
        budget = Budget(window.tokens, reserve, count)
        constrained = self.settings.uses_constraint(request)
        fitted = await fit(request, self.options, constrained=constrained, budget=budget)
        shrunk = tuple(step.value for step in fitted.shrunk)
        if shrunk:
            logger.debug(
                "shrunk to fit %s of %s tokens (window from %s): %s, now %s tokens",
                budget.prompt, window.tokens, window.source, ", ".join(shrunk), fitted.tokens,
            )  # fmt: skip
        return fitted.request, evolve(self.settings, options=fitted.options), shrunk

    async def _attempts(self, turn: TurnState) -> AsyncIterator[Event]:
        """The turn's attempts, until one is released (or dropped) or none is left."""
        for attempt_no in range(self.policy.max_retries + 1):
            can_retry = turn.opening.policy.may_retry(attempt_no)
            attempt = turn.next_attempt(can_retry)
            inner = self.inner.stream(turn.inner_request())
            async for event in guarded(inner, self.settings.repetition):
                for out in attempt.take(event):  # the reply through the parser, as it goes
                    yield out
            for out in attempt.end():
                yield out
            turn.record(attempt)
            turn.take(judgement := judge(turn, attempt, attempt_no, can_retry))
            if judgement.next is not None:
                continue
            if (released := judgement.released) is not None:
                turn.report.emitted_calls = released.emitted_calls
                for out in released.release():
                    yield out
            return

    async def _closing(self, turn: TurnState, request: ChatRequest) -> AsyncIterator[Event]:
        """When nothing was left to show, the user still gets text: words asked for once
        more, else the tool results, else the last reply the echo filter held back."""
        report, may_call = turn.report, turn.opening.policy.may_call
        if turn.dropped and may_call and self.rules.on("words_after_drop"):
            # Asked afresh, with no retry message in sight for the model to repeat.
            report.fire("words_after_drop")
            async for out in self.stream(request.replace(tool_choice=NONE)):
                if isinstance(out, Finish):
                    report.words_after(out)
                else:
                    yield out
        if may_call or turn.shown_any:
            return
        results = results_answer(request.messages, self.options.max_result_chars)
        if results and self.rules.on("results_as_answer"):
            note = "no answer in words came: the tool results are the answer"
            report.fire("results_as_answer", note)
            yield TextDelta(results)
        elif turn.withheld:
            report.notes.append("no other words came: the last reply stands, though it echoes")
            yield TextDelta(turn.withheld)


async def _noted(events: AsyncIterator[Event], note: str) -> AsyncIterator[Event]:
    """`events` with `note` first among the closing diagnostics' notes."""
    async for out in events:
        if isinstance(out, Finish) and out.diagnostics is not None:
            notes = (note, *out.diagnostics.notes)
            out = evolve(out, diagnostics=evolve(out.diagnostics, notes=notes))
        yield out


def behind_engine(backend: Backend, changes: EngineChanges) -> PromptedBackend:
    """`backend` behind the engine with `changes` on top of its settings, never wrapped
    twice."""
    if isinstance(backend, PromptedBackend):
        return backend.configure(changes) if changes.given() else backend
    return PromptedBackend(backend, **changes.given())
