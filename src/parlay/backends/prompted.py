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
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from attrs import evolve

from parlay.backends._attempt import Attempt
from parlay.backends._http import schema_rejected
from parlay.backends.base import Backend, Capabilities
from parlay.backends.bounds import (
    ATTEMPT_MAX_TOKENS,
    RepetitionLimit,
    guarded,
    with_max_tokens,
)
from parlay.context import AssistantMessage, Message, ToolCall, UserMessage
from parlay.contract.checks import CheckedCall, answered_calls, check_call
from parlay.contract.constrain import FINAL_SCHEMA, action_response_format
from parlay.contract.forced import NameChoice, name_choices
from parlay.contract.grounding import copied_answer, echoes
from parlay.contract.parser import ActionStreamParser, ParseResult
from parlay.contract.placeholders import is_placeholder
from parlay.contract.refusal import (
    DEFAULT_REFUSALS,
    RefusalPhrases,
    RefusalSignal,
    asks_user,
    detect_refusal,
)
from parlay.contract.relevance import fitting_tool
from parlay.contract.render import (
    DEFAULT_FORMAT,
    DEFAULT_MAX_RESULT_CHARS,
    Contract,
    ContractOptions,
    render_contract,
    retry_instruction,
)
from parlay.contract.retry import RetryPolicy, Verdict
from parlay.contract.rules import MISSED_CALL_RULES, VALUE_RULES, Rules
from parlay.contract.state import has_tool_activity
from parlay.diagnostics import Diagnostics, Retry
from parlay.errors import BackendStatusError, ConfigurationError
from parlay.events import (
    Event,
    Finish,
    FinishReason,
    ScoredTextDelta,
    TextDelta,
    Usage,
)
from parlay.request import AUTO, NONE, ChatRequest, ResponseFormat, ToolChoice, ToolSpec

logger = logging.getLogger("parlay.prompted")

# The grammar of a reply that may only answer in words.
ANSWER_ONLY = ResponseFormat(FINAL_SCHEMA, name="final", strict=True)
# Retry reasons for a call carrying a value the conversation did not give.
MADE_UP_VALUES = ("example_value", "invented_value", "same_value")
# Earlier retries after which a made-up value means the turn has nothing real to call with.
# Not a missed_tool nudge: the call it led to may take a value from what the model knows
# ("Paris" for "the French capital"); asked about it, a model sure of it gives it again
# and keeps its call (`kept_insisted_value`), where the answer-only grammar would have
# turned a right call into "I cannot say."
DOUBTFUL = (*MADE_UP_VALUES, "example_answer", "pretended_call", "forced_call")
# Alternatives per token asked of the inner backend for `forced.name_choices`.
NAME_ALTERNATIVES = 5


class PromptedBackend:
    """Wraps any `Backend` and gives it tool calling through a prompt contract.

    - `action_format`: "fenced" (```` ```json action ```` blocks), "json" (one JSON object
      per reply) or "command" (`@tool NAME {...}` lines); the parser reads all three.
      None (default): "json" when replies can be held to a grammar, else "fenced".
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
    - `check_values`: retry calls whose values were copied from the examples or, under
      `auto`, given by no one, and answers quoting the examples' made-up result
      (`parlay.contract.grounding`). Default on.
    - `check_missed_calls`: under `auto`, ask once more, naming the tool, when the model
      answers in words a request that names what a tool does
      (`parlay.contract.relevance`). Default on.
    - `min_offered_share`: under `auto` and a grammar, a call is taken for one the grammar
      forced, and the model asked for an answer instead, when at some token of the
      tool's name less than this share of the alternatives it weighed there go on to an
      offered tool (`parlay.contract.forced`; needs a backend that reports
      log-probabilities, like llama.cpp, vLLM or OpenAI). Default 0.5; 0 turns the check
      off. A model unsure even of its right names does better lower: the embedded
      SmolLM2-135M runs at 0.1 (`parlay.start.default_backend`).
    - `max_tokens`: the token budget of each attempt when the request sets none (default
      2048; None: the inner backend's own limit). A caller's `max_tokens` wins.
    - `rules_off`: names of the engine's rules to switch off (`parlay.contract.rules.RULES`
      lists them and what each does); every reply names the rules that acted on it in
      `Diagnostics.rules`.
    - `repetition`: stop an attempt that has fallen into a loop, repeating one line or
      sentence (`parlay.backends.bounds.RepetitionLimit`; None turns the guard off).

    The defaults are the configuration that did best on BFCL with both local models
    measured (bench/results/bfcl.md): json under a grammar was the most even, and free
    fenced blocks are the best where no grammar is available.
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
        check_values: bool = True,
        check_missed_calls: bool = True,
        min_offered_share: float = 0.5,
        max_tokens: int | None = ATTEMPT_MAX_TOKENS,
        repetition: RepetitionLimit | None = RepetitionLimit(),  # noqa: B008 (frozen)
        rules_off: Iterable[str] = (),
    ) -> None:
        if constrained and not inner.capabilities.json_schema:
            raise ConfigurationError(
                f"constrained=True needs a backend with JSON-schema output; {inner.name} has "
                "none: pass constrained=None (use it when available) or False"
            )
        if not 0 <= min_offered_share <= 1:
            raise ConfigurationError(
                f"min_offered_share must be between 0 and 1, got {min_offered_share}"
            )
        self.inner = inner
        self.constrained = constrained
        if action_format is None:
            action_format = "json" if self.grammar_available else DEFAULT_FORMAT
        self.options = ContractOptions(
            action_format=action_format,
            few_shot=few_shot,
            max_examples=max_examples,
            max_result_chars=max_result_chars,
            thought_limit=thought_limit,
            template_dir=str(template_dir) if template_dir is not None else None,
            listed_calls=listed_calls,
        )
        off = set(rules_off)
        if not check_values:
            off |= VALUE_RULES
        if not check_missed_calls:
            off |= MISSED_CALL_RULES
        self.rules = Rules(frozenset(off))
        self.policy = RetryPolicy(max_retries, self.rules)
        self.refusal_phrases = refusal_phrases
        self.refusal_window = refusal_window
        self.check_values = check_values
        self.check_missed_calls = check_missed_calls
        self.min_offered_share = min_offered_share
        if max_tokens is not None and max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be 1 or more, got {max_tokens}")
        self.max_tokens = max_tokens
        self.repetition = repetition

    @property
    def action_format(self) -> str:
        return self.options.action_format

    @property
    def max_retries(self) -> int:
        return self.policy.max_retries

    def configure(self, **changes: Any) -> PromptedBackend:
        """A copy with some settings changed (same inner backend): handy for benchmarks."""
        settings: dict[str, Any] = {
            "action_format": self.options.action_format,
            "max_retries": self.policy.max_retries,
            "constrained": self.constrained,
            "few_shot": self.options.few_shot,
            "refusal_phrases": self.refusal_phrases,
            "template_dir": self.options.template_dir,
            "max_result_chars": self.options.max_result_chars,
            "thought_limit": self.options.thought_limit,
            "refusal_window": self.refusal_window,
            "max_examples": self.options.max_examples,
            "listed_calls": self.options.listed_calls,
            "check_values": self.check_values,
            "check_missed_calls": self.check_missed_calls,
            "min_offered_share": self.min_offered_share,
            "max_tokens": self.max_tokens,
            "repetition": self.repetition,
            "rules_off": self.rules.off,
        }
        settings.update(changes)
        return PromptedBackend(self.inner, **settings)

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
        return self.constrained is not False and self.inner.capabilities.json_schema

    def uses_constraint(self, request: ChatRequest) -> bool:
        return self.grammar_available and request.tool_choice.mode != "none"

    # -- the engine -----------------------------------------------------------------------
    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        if not request.tools and not has_tool_activity(request.messages):
            async for event in self.inner.stream(request):
                yield event
            return
        constrained = self.uses_constraint(request)
        choice = request.tool_choice
        # Under tool_choice="none" a reply must be words. Not held to the answer grammar:
        # under it SmolLM2 answered "What is the weather in Paris?" with "Paris"; a reply
        # that is only an action is asked again in words instead (`_words_wanted`).
        contract = render_contract(request, self.options, constrained=constrained)
        specs = {spec.name: spec for spec in contract.tools}
        response_format = request.response_format
        if constrained:
            response_format = self._grammar(contract.tools, request)
        logger.debug(
            "contract injected: format=%s tools=%s choice=%s state=%s constrained=%s",
            self.options.action_format,
            list(specs),
            choice.mode,
            contract.state.value,
            constrained,
        )
        answered = answered_calls(request.messages)

        def check(call: ToolCall) -> CheckedCall:
            return check_call(call, specs, contract, answered, check_values=self.check_values)

        # The model's own choice of tool names is only hidden when a grammar picks them.
        read_names = constrained and choice.mode == "auto" and self.min_offered_share > 0
        # Alternatives only for the engine's own reading: the text it hands on is parsed
        # out of the model's actions, so a caller's log-probabilities would not fit it
        # and asking the server for them would be wasted.
        options = evolve(request.options, top_logprobs=NAME_ALTERNATIVES if read_names else None)
        messages = contract.messages
        retries: list[Retry] = []
        fired: list[str] = []  # the rules that acted, in order (`Diagnostics.rules`)
        dropped = False  # the last reply only repeated parlay's own words
        notes: list[str] = []
        usage: Usage | None = None
        refusal: RefusalSignal | None = None
        emitted_calls = 0
        shown_text = False
        modes: list[str] = []
        first_answer: Attempt | None = None  # a plain answer held back by a missed_tool retry
        instruction = ""  # the message the last retry added
        last_finish: Finish | None = None
        repetition: str | None = None  # what a looping attempt repeated
        yielded = 0
        for attempt_no in range(self.policy.max_retries + 1):
            can_retry = choice.mode != "none" and self.policy.allows(attempt_no)
            if can_retry:
                mode = "buffered" if choice.forces_call else "hybrid"
            else:
                mode = "hybrid" if retries and choice.mode == "auto" else "live"
            modes.append(mode)
            attempt = Attempt(
                mode,
                check=check,
                choice_mode=choice.mode,
                refusal_phrases=self.refusal_phrases,
                refusal_window=self.refusal_window,
                suppress_text=shown_text,
                parallel=request.parallel_tool_calls,
            )
            parser = ActionStreamParser(specs, thought_limit=self.options.thought_limit)
            inner_request = request.replace(
                messages=messages,
                tools=(),
                tool_choice=AUTO,
                response_format=response_format,
                options=options,
            )
            inner_request = with_max_tokens(inner_request, self.max_tokens)
            try:
                async for event in guarded(self.inner.stream(inner_request), self.repetition):
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
                        yielded += 1
                        yield out
            except BackendStatusError as exc:
                # Only a refusal of the schema itself (400/422 naming it): a 5xx, 429 or 401
                # is no reason to send the request again.
                if not constrained or yielded or self.constrained or not schema_rejected(exc):
                    raise
                # The server could not turn the action schema into a grammar (some reject
                # parts of JSON schema): nothing was shown yet, so go on without it.
                note = (
                    f"the backend rejected the action schema (HTTP {exc.status_code}); "
                    "ran unconstrained"
                )
                logger.warning("%s", note)
                async for out in self.configure(constrained=False).stream(request):
                    if isinstance(out, Finish) and out.diagnostics is not None:
                        notes_after = (note, *out.diagnostics.notes)
                        out = evolve(out, diagnostics=evolve(out.diagnostics, notes=notes_after))
                    yield out
                return
            for out in attempt.route(parser.finish()):
                yielded += 1
                yield out
            parsed = parser.result()
            notes.extend(attempt.notes)
            notes.extend(f"{p.kind}: {p.detail}" for p in parsed.problems)
            if attempt.finish is not None:
                last_finish = attempt.finish
                if attempt.finish.usage is not None:
                    usage = attempt.finish.usage if usage is None else usage + attempt.finish.usage
                looped = attempt.finish.diagnostics and attempt.finish.diagnostics.repetition
                if looped:
                    repetition = looped
                    notes.extend(attempt.finish.diagnostics.notes)  # type: ignore[union-attr]
                elif attempt.finish.reason == "length":
                    notes.append("the reply was cut by the token limit")
            if self._words_wanted(choice, parsed, attempt_no):
                fired.append("words_only")
                # Under tool_choice="none" a reply that is only a call leaves the user
                # nothing: ask again for words (a grammar, where there is one, prevents it).
                retries.append(Retry("words_only", ", ".join(c.name for c in parsed.calls)))
                instruction = retry_instruction(
                    "words_only", "", len(retries), contract.tools, choice, self.options
                )
                reply = AssistantMessage("".join(attempt.raw))
                messages = (*messages, reply, UserMessage(instruction))
                continue
            signal = detect_refusal(parsed.text, self.refusal_phrases)
            if signal is not None and signal.kind == "soft" and asks_user(parsed.text):
                # "Which city? I can't check the weather without one." asks for what a
                # tool needs: the right reply, not a claim that no tool could help.
                signal = None
            refusal = refusal or signal
            verdict: Verdict | None = None
            if can_retry:
                copied = (
                    copied_answer(parsed.text, contract.example_answers)
                    if self.check_values
                    else ""
                )
                verdict = self.policy.judge(
                    calls=parsed.calls,
                    issues=attempt.issues,
                    problems=parsed.problems,
                    choice=choice,
                    refusal=signal,
                    tools=contract.tools,
                    copied_answer=copied,
                    pretended_tool=_named_tool(parsed.text, contract.tools) if copied else None,
                    fitting_tool=self._fitting_tool(request, contract, parsed.calls, retries),
                    forced=self._forced(attempt, parsed.calls, contract) if read_names else None,
                    placeholder=is_placeholder(parsed.text),
                )
                if verdict is not None and verdict.about_text and attempt.shown_text:
                    notes.append(f"not retried ({verdict.reason}): the text was already shown")
                    verdict = None
            if (
                verdict is not None
                and self.rules.on("kept_insisted_value")
                and _insists(verdict, retries)
            ):
                fired.append("kept_insisted_value")
                # Asked where the value came from, the model gave the same call again: it
                # may have worked the value out ("tomorrow" as a date), so the call stands.
                notes.append(
                    f"kept {verdict.tool.name if verdict.tool else 'a'} call: "
                    f"its {verdict.argument} is not in the conversation"
                )
                verdict = None
            if verdict is not None:
                fired.append(verdict.reason)
                retries.append(Retry(verdict.reason, verdict.detail))
                if self._falls_back_to_words(verdict, retries, choice):
                    fired.append("words_fallback")
                logger.info(
                    "retry %d/%d: %s %s",
                    len(retries),
                    self.policy.max_retries,
                    verdict.reason,
                    verdict.detail,
                )
                messages, response_format, instruction = self._retry_request(
                    request, verdict, retries, attempt, contract, messages, response_format
                )
                shown_text = shown_text or attempt.shown_text
                if verdict.reason == "missed_tool" and not attempt.shown_text:
                    first_answer = attempt
                continue
            own_words = _own_words(attempt, parsed, instruction)
            if own_words and self.rules.on("echo_filter"):
                fired.append("echo_filter")
                # Qwen and SmolLM2 answered retry messages with their own words ("The tool
                # call, or your answer to the user.") and copied the format's stand-ins
                # ("your answer"): that is no answer, and the user should not read
                # parlay's instructions. An answer held back for a missed_tool retry
                # stands instead.
                if first_answer is None:
                    notes.append(f"dropped a reply that only repeated {own_words}")
                    dropped = True
                    break
                notes.append(f"the reply repeated {own_words}: the first answer stands")
                attempt = first_answer
            elif not can_retry and read_names and parsed.calls:
                attempt = self._last_forced(attempt, parsed.calls, contract, first_answer, notes)
                if attempt is first_answer:
                    fired.append("first_answer_stands")
            for out in attempt.release():
                yield out
            emitted_calls = attempt.emitted_calls
            break
        if dropped and choice.mode != "none" and self.rules.on("words_after_drop"):
            # Nothing is left to show: ask once more, told to answer in words, with no
            # retry message in sight to repeat (SmolLM2 ended a turn after a tool result
            # with only the retry's words, and the user got an empty message).
            fired.append("words_after_drop")
            async for out in self.stream(request.replace(tool_choice=NONE)):
                if not isinstance(out, Finish):
                    yield out
                    continue
                last_finish = out
                if out.usage is not None:
                    usage = out.usage if usage is None else usage + out.usage
        reason: FinishReason = "tool_calls" if emitted_calls else "stop"
        if not emitted_calls and last_finish is not None and last_finish.reason != "tool_calls":
            reason = last_finish.reason
        diagnostics = Diagnostics(
            contract_injected=True,
            action_format=self.options.action_format,
            tool_history_detected=contract.tool_history,
            calls_parsed=emitted_calls,
            retries=tuple(retries),
            refusal=f"{refusal.kind}: {refusal.phrase}" if refusal else None,
            constrained=constrained,
            notes=tuple(notes),
            tool_state=contract.state.value,
            streaming="/".join(modes),
            repetition=repetition,
            rules=tuple(fired),
        )
        logger.debug("prompted reply: %s", diagnostics)
        yield Finish(
            reason,
            usage,
            raw=last_finish.raw if last_finish else None,
            diagnostics=diagnostics,
            model=last_finish.model if last_finish else None,
        )

    def _words_wanted(self, choice: ToolChoice, parsed: ParseResult, attempt_no: int) -> bool:
        """Under tool_choice="none", whether a reply left no text but (ignored) calls."""
        return (
            choice.mode == "none"
            and bool(parsed.calls)
            and not parsed.text.strip()
            and self.policy.allows(attempt_no)
        )

    def _fitting_tool(
        self,
        request: ChatRequest,
        contract: Contract,
        calls: Sequence[ToolCall],
        retries: list[Retry],
    ) -> ToolSpec | None:
        """The tool a plain answer should perhaps have called (see `relevance`).

        Looked for only when the reply has no call: reading every tool's description
        against the request is not worth it on the replies that call.
        """
        if not self.check_missed_calls or request.tool_choice.mode != "auto" or calls:
            return None
        # The first reply only: a plain answer after a retry is the one the retry asked
        # for (a missing value asked of the user, an answer instead of a forced call),
        # and after this nudge it is the model's considered one.
        if retries:
            return None
        return fitting_tool(request.messages, contract.tools)

    def _forced(
        self, attempt: Attempt, calls: Sequence[ToolCall], contract: Contract
    ) -> NameChoice | None:
        """The first call, when every call of the reply was forced on the model by the
        grammar (see `forced`); a reply that also makes a call of its own choosing stands."""
        names = [spec.name for spec in contract.tools]
        choices = name_choices(attempt.tokens, calls, names)
        if not calls or len(choices) != len(calls):
            return None
        if all(choice.share < self.min_offered_share for choice in choices):
            return choices[0]
        return None

    def _last_forced(
        self,
        attempt: Attempt,
        calls: Sequence[ToolCall],
        contract: Contract,
        first_answer: Attempt | None,
        notes: list[str],
    ) -> Attempt:
        """The attempt to release when no retry is left: a call the grammar forced after a
        missed_tool nudge gives way to the plain answer the nudge held back (the model's
        own reply before the engine pointed it at a tool); any other stands, noted."""
        forced = self._forced(attempt, calls, contract)
        if forced is None:
            return attempt
        if (
            first_answer is not None
            and not attempt.shown_text
            and self.rules.on("first_answer_stands")
        ):
            notes.append(
                f"the first answer stands: the call was the grammar's, {forced.describe()}"
            )
            return first_answer
        notes.append(f"kept a call the grammar forced (no retry left): {forced.describe()}")
        return attempt

    def _retry_request(
        self,
        request: ChatRequest,
        verdict: Verdict,
        retries: list[Retry],
        attempt: Attempt,
        contract: Contract,
        messages: tuple[Message, ...],
        response_format: ResponseFormat | None,
    ) -> tuple[tuple[Message, ...], ResponseFormat | None, str]:
        """The messages and grammar of the next attempt after `verdict`, and the
        instruction added for it ("" when none is)."""
        choice = request.tool_choice
        constrained = self.uses_constraint(request)
        plain = evolve(self.options, few_shot=False)
        if verdict.reason == "repeated_call":
            response_format = self._away_from_repeats(attempt, contract, request, response_format)
        elif verdict.reason == "pretended_call" and verdict.tool is not None and constrained:
            # "get_crime_rate returned {"status": "done"}": after a nudge towards a tool,
            # Qwen wrote the examples' made-up result as that tool's instead of calling
            # it. Asked again (without the examples, below), it may call that tool or
            # answer; its values are still checked. (Held to the call, it also called
            # where no tool fit.)
            response_format = self._grammar((verdict.tool,), request)
        elif self._falls_back_to_words(verdict, retries, choice):
            words = request.replace(tool_choice=NONE)
            messages = render_contract(words, plain, constrained=True).messages
            return messages, _words(request), ""
        instruction = retry_instruction(
            verdict.reason,
            verdict.detail,
            len(retries),
            contract.tools,
            choice,
            self.options,
            verdict.tool,
            constrained=constrained,
            argument=verdict.argument,
            parallel=request.parallel_tool_calls,
        )
        if verdict.reason not in (*MADE_UP_VALUES, "example_answer", "pretended_call"):
            reply = AssistantMessage("".join(attempt.raw))
            return (*messages, reply, UserMessage(instruction)), response_format, instruction
        # The examples taught the model to fill values in (and to quote their made-up
        # result): ask again without them and without the reply, so nothing is left to
        # copy. With either in sight SmolLM2 wrote the same value again, and Qwen, asked
        # about an invented value, answered with the examples' result instead.
        fresh = render_contract(request, plain, constrained=constrained).messages
        return (*fresh, UserMessage(instruction)), response_format, instruction

    def _falls_back_to_words(
        self, verdict: Verdict, retries: list[Retry], choice: ToolChoice
    ) -> bool:
        """Whether the retry after `verdict` goes under the answer-only grammar, with no
        instruction: after a call the grammar forced on the model, a stand-in answer, or
        a value no one gave after an earlier doubt about this turn (a made-up value, a
        quoted made-up result, or a plain answer the engine pointed at a tool). The user
        most likely asked for something no tool does, or never gave the value; asking
        again does not help a small model, a grammar for words does. The conversation
        goes as it was, rendered as under tool_choice="none": with an instruction
        added, both models answered with its words ("Please provide the strings...")."""
        if not self.rules.on("words_fallback"):
            return False
        if verdict.reason in ("forced_call", "placeholder_answer"):
            return True
        return (
            verdict.reason in MADE_UP_VALUES
            and choice.mode == "auto"
            and self.grammar_available
            and any(r.reason in DOUBTFUL for r in retries[:-1])
        )

    def _away_from_repeats(
        self,
        attempt: Attempt,
        contract: Contract,
        request: ChatRequest,
        current: ResponseFormat | None,
    ) -> ResponseFormat | None:
        """A grammar for the retry that leaves out the tools the model keeps repeating.

        Small models loop on a call whose result they already have; asking again rarely
        helps, a grammar does. With no other tool left under `auto`, only a final answer
        is allowed. Used whenever the inner backend takes JSON schemas, unless
        `constrained=False`.
        """
        choice = request.tool_choice
        if not self.grammar_available or choice.mode == "tool":
            return current
        repeated = {i.call.name for i in attempt.issues if i.kind == "repeated_call"}
        others = tuple(t for t in contract.tools if t.name not in repeated)
        if others:
            return self._grammar(others, request)
        if choice.mode == "auto":
            return _words(request)
        return current

    def _grammar(self, tools: tuple[ToolSpec, ...], request: ChatRequest) -> ResponseFormat | None:
        """The grammar of a reply calling one of `tools` or, under `auto`, answering: in the
        caller's own format (`response_format`) when the request has one."""
        answer = request.response_format.schema if request.response_format else None
        return action_response_format(
            tools,
            request.tool_choice,
            self.options.action_format,
            answer=answer,
            parallel=request.parallel_tool_calls,
            listed=self.options.listed_calls,
        )


def _words(request: ChatRequest) -> ResponseFormat:
    """The grammar of an answer in words: the caller's format if any, else plain text."""
    return request.response_format or ANSWER_ONLY


def _own_words(attempt: Attempt, parsed: ParseResult, instruction: str) -> str:
    """What of parlay's own a plain reply, not yet shown, only repeats ("" if nothing):
    a stand-in of the format instructions, or the retry message it answers."""
    if parsed.calls or attempt.shown_text:
        return ""
    if is_placeholder(parsed.text):
        return "a stand-in of the format instructions"
    if instruction and echoes(parsed.text, instruction):
        return "the retry message"
    return ""


def _named_tool(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    """The first tool whose name a plain reply writes (as a word of its own)."""
    return next(
        (t for t in tools if re.search(rf"(?<![\w.]){re.escape(t.name)}(?![\w])", text)), None
    )


def _insists(verdict: Verdict, retries: list[Retry]) -> bool:
    """Whether the model gave, after being asked about it, the same invented value.
    (A value of the examples given again is not kept: without the examples in sight,
    SmolLM2 and Qwen still wrote the examples' city for "How is the weather?".)"""
    return verdict.reason == "invented_value" and any(
        r.reason == "invented_value" and r.detail == verdict.detail for r in retries
    )
