"""Tool calling for models without it: the prompt-contract engine as a `Backend`.

`PromptedBackend(inner)` renders the contract into the prompt, streams the inner model's
text through the incremental action parser, repairs calls against their schemas, and
retries (bounded) when a call was expected and missing, the model refused, or a call
was unreadable, unknown or did not fit its schema. Sessions and the proxy cannot tell
it from a native backend: it reports `native_tools=True` and yields the same events.

Streaming and retries, explicitly. A retry needs the whole reply before deciding, and no
event is emitted for a reply that is then discarded, so each attempt runs in one of three
modes (recorded as `Diagnostics.streaming`):

- `live`: no retry can follow (`max_retries` spent or 0, or `tool_choice="none"`):
  every event goes out as the parser produces it.
- `hybrid` (`tool_choice="auto"` with retries left, or the last attempt after a retry
  under `auto`, whose short answer may only repeat the retry message and is then
  replaced by an earlier plain answer or dropped): visible text goes out live once
  `refusal_window` characters have shown it is not a refusal; from the first action
  on, the call events are held until the reply ends and has been judged. If a retry
  follows after text went out, the text stays (it was not discarded) and only the
  retry's calls are added; its own text is dropped and noted.
- `buffered` (`tool_choice` required or a named tool, retries left): the whole reply is
  held, since a reply without a call is retried.

Held calls are emitted with one `ToolCallArgsDelta` holding the repaired arguments;
live calls stream the arguments as written (normalised to JSON) and their `ToolCallEnd`
carries the repaired ones.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

from attrs import evolve

from parlay.backends._http import schema_rejected
from parlay.backends.base import Backend, Capabilities
from parlay.backends.bounds import (
    ATTEMPT_MAX_TOKENS,
    RepetitionLimit,
    guarded,
    with_max_tokens,
)
from parlay.backends.offered import offered_calls_only, offered_names
from parlay.backends.tokens import TokenCount, count_tokens
from parlay.engine.attempt import Attempt
from parlay.engine.checks.leaning import DEFAULT_CALL_CONFIDENCE, answer_share
from parlay.engine.checks.refusal import DEFAULT_REFUSALS, RefusalPhrases
from parlay.engine.checks.results_answer import results_answer
from parlay.engine.checks.retry import DEFAULT_CHECKS, Check, RetryPolicy
from parlay.engine.checks.rules import Rules
from parlay.engine.contract.parser import ActionStreamParser, ParseResult
from parlay.engine.contract.render import (
    DEFAULT_FORMAT,
    DEFAULT_MAX_RESULT_CHARS,
    ContractOptions,
    render_contract,
)
from parlay.engine.contract.state import has_tool_activity
from parlay.engine.judging import to_release, verdict_on
from parlay.engine.next_attempt import (
    ask_for_words,
    retry,
    wants_words,
)
from parlay.engine.opening import NAME_ALTERNATIVES, begin_turn, next_attempt
from parlay.engine.settings import EngineSettings
from parlay.engine.turn import Turn
from parlay.errors import BackendStatusError, ConfigurationError
from parlay.events import Event, Finish, ScoredTextDelta, TextDelta
from parlay.request import AUTO, NONE, ChatRequest

logger = logging.getLogger("parlay.prompted")

__all__ = ["NAME_ALTERNATIVES", "PromptedBackend", "behind_engine"]


class PromptedBackend:
    """Wraps any `Backend` and gives it tool calling through a prompt contract.

    - `action_format`: "fenced" (```` ```json action ```` blocks), "json" (one JSON object
      per reply), "command" (`@tool NAME {...}` lines) or "typed" (one JSON object whose
      kind comes first, as a value); the parser reads all four. None (default): "typed"
      when replies can be held to a grammar, else "fenced".
    - `max_retries`: bounded retries (default 2), each with a stricter instruction.
    - `constrained`: hold every reply (except under `tool_choice="none"`) to a JSON
      schema of valid actions; under `auto` a plain answer comes as `{"final": ...}`.
      None (default): whenever the inner backend takes JSON schemas, falling back to
      free text if it rejects one. True: always (an error if it cannot). False: never.
    - `few_shot`: example turns synthesised from the request's tools (default on).
    - `refusal_phrases`: a `RefusalPhrases` (extend `DEFAULT_REFUSALS` with your own).
    - `template_dir`: your folder of templates, searched before parlay's own.
    - `max_result_chars`: tool outputs longer than this are cut, with a marker.
    - `refusal_window`: characters of text held (under `auto`) before it streams.
    - `listed_calls`: with parallel calls allowed, the json format (and any format under a
      grammar) writes every call in the list form, `{"actions": [...]}`, one call too,
      and the grammar admits only that form (default off; see `ContractOptions`).
    - `restate_request`: the continuation carrying tool results restates the user's
      request, for a model to see what is still to do (default on; off for the embedded
      SmolLM2, `parlay.start.default_backend`).
    - `check_values`: retry calls whose values were copied from the examples or, under
      `auto`, given by no one, and answers quoting the examples' made-up result
      (`parlay.engine.contract.grounding`): False switches these rules off, True on, None
      (default) leaves each as shipped.
    - `min_offered_share`: under `auto` and a grammar, a call is taken for one the grammar
      forced, and the model asked for an answer instead, when at some token of the
      tool's name less than this share of the alternatives it weighed there go on to an
      offered tool (`parlay.engine.checks.forced`; needs a backend that reports
      log-probabilities, like llama.cpp, vLLM or OpenAI). Default 0.5; 0 turns the check
      off. A model unsure even of its right names does better lower: the embedded
      SmolLM2-135M runs at 0.1 (`parlay.start.default_backend`).
    - `min_call_confidence`: the one knob that trades calls against abstentions. Under
      `auto`, a first reply's calls go out only when the model put at least this share of
      its weight on calling rather than answering in words (read where the reply writes
      its kind, `parlay.engine.checks.leaning`; needs log-probabilities and the json or
      typed format); else it is asked for an answer in words. Default
      `DEFAULT_CALL_CONFIDENCE`; 0 switches it off; higher abstains more.
    - `max_tokens`: the token budget of each attempt when the request sets none (default
      2048; None: the inner backend's own limit). A caller's `max_tokens` wins.
    - `checks`: the checks a reply passes, in order (default `DEFAULT_CHECKS`): add your
      own (`[*DEFAULT_CHECKS, CallRule("no_wildcards", check)]`), reorder or replace them
      (`parlay.engine.checks.retry.Check`).
    - `rules_off`: names of rules to switch off (`parlay.engine.checks.rules.RULES` lists
      parlay's own); every reply names the rules that acted on it in `Diagnostics.rules`.
    - `repetition`: stop an attempt that has fallen into a loop, repeating one line or
      sentence (`parlay.backends.bounds.RepetitionLimit`; None turns the guard off).

    The defaults are measured on BFCL's development benchmark (bench/results/bfcl-dev.md).
    """

    def __init__(
        self,
        inner: Backend,
        *,
        action_format: str | None = None,
        max_retries: int = 2,
        constrained: bool | None = None,
        few_shot: bool = True,
        refusal_phrases: RefusalPhrases = DEFAULT_REFUSALS,
        template_dir: str | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        thought_limit: int = 200,
        refusal_window: int = 200,
        max_examples: int = 4,
        listed_calls: bool = False,
        restate_request: bool = True,
        check_values: bool | None = None,
        min_offered_share: float = 0.5,
        min_call_confidence: float = DEFAULT_CALL_CONFIDENCE,
        max_tokens: int | None = ATTEMPT_MAX_TOKENS,
        repetition: RepetitionLimit | None = RepetitionLimit(),  # noqa: B008 (frozen)
        rules_off: Iterable[str] = (),
        checks: Iterable[Check] = DEFAULT_CHECKS,
    ) -> None:
        if constrained and not inner.capabilities.json_schema:
            raise ConfigurationError(
                f"constrained=True needs a backend with JSON-schema output; {inner.name} has "
                "none: pass constrained=None (use it when available) or False"
            )
        for knob, value in (
            ("min_offered_share", min_offered_share),
            ("min_call_confidence", min_call_confidence),
        ):
            if not 0 <= value <= 1:
                raise ConfigurationError(f"{knob} must be between 0 and 1, got {value}")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be 1 or more, got {max_tokens}")
        self.inner = inner
        self.constrained = constrained
        grammar = constrained is not False and inner.capabilities.json_schema
        if action_format is None:
            action_format = "typed" if grammar else DEFAULT_FORMAT
        options = ContractOptions(
            action_format=action_format,
            few_shot=few_shot,
            max_examples=max_examples,
            max_result_chars=max_result_chars,
            thought_limit=thought_limit,
            template_dir=str(template_dir) if template_dir is not None else None,
            listed_calls=listed_calls,
            restate_request=restate_request,
        )
        rules = Rules().switched(off=rules_off, values=check_values)
        self.settings = EngineSettings(
            options=options,
            policy=RetryPolicy(max_retries, rules, tuple(checks)),
            refusal_phrases=refusal_phrases,
            refusal_window=refusal_window,
            min_offered_share=min_offered_share,
            min_call_confidence=min_call_confidence or None,
            grammar_available=grammar,
            max_tokens=max_tokens,
            repetition=repetition,
        )

    # What the settings hold, where a caller (a benchmark, a test) looks for it.
    @property
    def options(self) -> ContractOptions:
        return self.settings.options

    @property
    def policy(self) -> RetryPolicy:
        return self.settings.policy

    @property
    def rules(self) -> Rules:
        return self.settings.rules

    @property
    def min_offered_share(self) -> float:
        return self.settings.min_offered_share

    @property
    def max_tokens(self) -> int | None:
        return self.settings.max_tokens

    @property
    def check_values(self) -> bool:
        return self.settings.check_values

    @property
    def min_call_confidence(self) -> float:
        return self.settings.min_call_confidence or 0.0

    @property
    def action_format(self) -> str:
        return self.options.action_format

    @property
    def max_retries(self) -> int:
        return self.policy.max_retries

    def configure(self, **changes: Any) -> PromptedBackend:
        """A copy with some settings changed (same inner backend): handy for benchmarks."""
        options, kept = self.settings.options, self.settings
        settings: dict[str, Any] = {
            "action_format": options.action_format,
            "max_retries": kept.policy.max_retries,
            "constrained": self.constrained,
            "few_shot": options.few_shot,
            "refusal_phrases": kept.refusal_phrases,
            "template_dir": options.template_dir,
            "max_result_chars": options.max_result_chars,
            "thought_limit": options.thought_limit,
            "refusal_window": kept.refusal_window,
            "max_examples": options.max_examples,
            "listed_calls": options.listed_calls,
            "restate_request": options.restate_request,
            "min_offered_share": kept.min_offered_share,
            "min_call_confidence": self.min_call_confidence,
            "max_tokens": kept.max_tokens,
            "repetition": kept.repetition,
        }
        # The rules as they are, then switched as asked (not rebuilt from the defaults).
        rules = self.rules.switched(
            off=changes.pop("rules_off", ()),
            on=changes.pop("rules_on", ()),
            values=changes.pop("check_values", None),
        )
        settings.update(changes)
        checks = settings.pop("checks", kept.policy.checks)
        return PromptedBackend(self.inner, **settings, rules_off=rules.off, checks=checks)

    @property
    def name(self) -> str:
        return f"prompted:{self.inner.name}"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(native_tools=True, json_schema=self.inner.capabilities.json_schema)

    @property
    def grammar_available(self) -> bool:
        """Whether replies may be held to a grammar: the inner backend takes JSON schemas
        and `constrained` is not False."""
        return self.settings.grammar_available

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        """The tokens of what the inner model is sent for `request`: the rendered
        contract, tools and all, counted by the inner backend."""
        if not request.tools and not has_tool_activity(request.messages):
            return await count_tokens(self.inner, request)
        constrained = self.settings.uses_constraint(request)
        contract = render_contract(request, self.options, constrained=constrained)
        return await count_tokens(self.inner, ChatRequest(contract.messages))

    # -- the engine -----------------------------------------------------------------------
    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        # Retries spent, a call to a tool not offered becomes a plain answer naming it.
        return offered_calls_only(self._stream(request), offered_names(request))

    async def _stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if not request.tools and not has_tool_activity(request.messages):
            async for event in self.inner.stream(request):
                yield event
            return
        turn = begin_turn(self.settings, request)
        for attempt_no in range(self.policy.max_retries + 1):
            can_retry = turn.policy.may_retry(attempt_no)
            attempt = next_attempt(self.settings, turn, can_retry)
            parser = ActionStreamParser(turn.specs, thought_limit=self.options.thought_limit)
            try:
                async for out in self._run(turn, attempt, parser):
                    yield out
            except BackendStatusError as exc:
                if not self._runs_unconstrained(turn, exc):
                    raise
                async for out in self._unconstrained(request, exc.status_code):
                    yield out
                return
            again, released = self._settle(turn, attempt, parser.result(), attempt_no, can_retry)
            if again:
                continue
            if released is not None:
                turn.emitted_calls = released.emitted_calls
                for out in released.release():
                    turn.yielded += 1
                    yield out
            break
        async for out in self._closing(turn, request):
            yield out
        finish = turn.finish(self.options.action_format)
        logger.debug("prompted reply: %s", finish.diagnostics)
        yield finish

    def _runs_unconstrained(self, turn: Turn, error: BackendStatusError) -> bool:
        """Whether a failed attempt goes again without the grammar: only on a refusal of
        the schema itself (400/422 naming it), before anything was shown, and unless the
        caller asked for the grammar. A 5xx, 429 or 401 is no reason to send the request
        again."""
        if not turn.constrained or turn.yielded or self.constrained:
            return False
        return schema_rejected(error)

    def _settle(
        self, turn: Turn, attempt: Attempt, parsed: ParseResult, attempt_no: int, can_retry: bool
    ) -> tuple[bool, Attempt | None]:
        """What follows an attempt: whether the engine asks again, else the attempt
        whose events go out (None: nothing does)."""
        turn.record(attempt, parsed)
        if attempt_no == 0:
            turn.answer_share = answer_share(attempt.tokens, self.options.action_format)
        if wants_words(self.settings, turn, attempt, parsed, attempt_no):
            ask_for_words(self.settings, turn, attempt, parsed)
            return True, None
        verdict = verdict_on(self.settings, turn, attempt, parsed, can_retry)
        if verdict is not None:
            retry(self.settings, turn, verdict, attempt)
            return True, None
        return False, to_release(self.settings, turn, attempt, parsed, can_retry)

    async def _closing(self, turn: Turn, request: ChatRequest) -> AsyncIterator[Event]:
        """After the attempts, when nothing was left to show: words asked for once more,
        and under tool_choice none, the tool results as the answer of last resort, or the
        last reply the echo filter held back (the user gets text, whatever came)."""
        if turn.dropped and turn.policy.may_call and self.rules.on("words_after_drop"):
            # Ask once more, told to answer in words, with no retry message in sight to
            # repeat (SmolLM2 ended a turn after a tool result with only the retry's
            # words, and the user got an empty message).
            turn.fired.append("words_after_drop")
            async for out in self.stream(request.replace(tool_choice=NONE)):
                if isinstance(out, Finish):
                    turn.add_usage(out)
                    turn.take_rules_of(out)
                else:
                    turn.yielded += 1
                    yield out
        if turn.policy.may_call or turn.yielded:
            return
        results = results_answer(request.messages, self.options.max_result_chars)
        if results and self.rules.on("results_as_answer"):
            turn.fired.append("results_as_answer")
            turn.notes.append("no answer in words came: the tool results are the answer")
            turn.yielded += 1
            yield TextDelta(results)
        elif turn.withheld:
            # Only parlay's words came back, every try, and no result can answer: the
            # model's last words stand rather than an empty message.
            turn.notes.append("no other words came: the last reply stands, though it echoes")
            turn.yielded += 1
            yield TextDelta(turn.withheld)

    async def _run(
        self, turn: Turn, attempt: Attempt, parser: ActionStreamParser
    ) -> AsyncIterator[Event]:
        """One attempt: the inner model's reply through the parser, events as they go."""
        inner_request = turn.request.replace(
            messages=turn.messages,
            tools=(),
            tool_choice=AUTO,
            response_format=turn.response_format,
            options=turn.options,
        )
        inner_request = with_max_tokens(inner_request, self.settings.max_tokens)
        async for event in guarded(self.inner.stream(inner_request), self.settings.repetition):
            if isinstance(event, Finish):
                attempt.finish = event
                continue
            if isinstance(event, TextDelta):
                attempt.raw.append(event.text)
                if isinstance(event, ScoredTextDelta):
                    attempt.tokens.extend(event.tokens)
                produced = parser.feed(event.text)
            else:  # a native call from the inner backend: take it as it is
                produced = [event]
            for out in attempt.route(produced):
                turn.yielded += 1
                yield out
        for out in [*attempt.route(parser.finish()), *attempt.end_text()]:
            turn.yielded += 1
            yield out

    async def _unconstrained(self, request: ChatRequest, status: int) -> AsyncIterator[Event]:
        """The server could not turn the action schema into a grammar (some reject parts
        of JSON schema) and nothing was shown yet: the request again, without it."""
        note = f"the backend rejected the action schema (HTTP {status}); ran unconstrained"
        logger.warning("%s", note)
        async for out in self.configure(constrained=False).stream(request):
            if isinstance(out, Finish) and out.diagnostics is not None:
                notes_after = (note, *out.diagnostics.notes)
                out = evolve(out, diagnostics=evolve(out.diagnostics, notes=notes_after))
            yield out


def behind_engine(backend: Backend, **options: Any) -> PromptedBackend:
    """`backend` behind the prompt-contract engine with `options` (None: unchanged). A
    backend already behind it is reconfigured, never wrapped twice."""
    given = {key: value for key, value in options.items() if value is not None}
    if isinstance(backend, PromptedBackend):
        return backend.configure(**given) if given else backend
    return PromptedBackend(backend, **given)
