"""What the prompted engine's parts read of its configuration, as one value.

`PromptedBackend` builds it once from its arguments; the turn, the judging and the next
attempt read it instead of the backend, so none imports the backend back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import frozen

from parlay.backends.base import Backend
from parlay.backends.bounds import RepetitionLimit
from parlay.engine.checks.refusal import RefusalPhrases
from parlay.engine.checks.retry import Check, RetryPolicy
from parlay.engine.checks.rules import VALUE_RULES, Rules
from parlay.engine.contract.constrain import action_response_format
from parlay.engine.contract.pieces import DEFAULT_FORMAT, ContractOptions
from parlay.engine.policy import TurnPolicy
from parlay.errors import ConfigurationError
from parlay.request import ChatRequest, ResponseFormat, ToolSpec


@frozen
class EngineSettings:
    options: ContractOptions
    policy: RetryPolicy
    refusal_phrases: RefusalPhrases
    refusal_window: int
    min_call_confidence: float
    grammar_available: bool  # the inner backend takes JSON schemas, `constrained` allows it
    max_tokens: int | None
    repetition: RepetitionLimit | None

    @property
    def check_values(self) -> bool:
        """Whether any value rule is on (the value checks are then worked out)."""
        return any(self.policy.rules.on(rule) for rule in VALUE_RULES)

    def uses_constraint(self, request: ChatRequest) -> bool:
        return self.grammar_available and TurnPolicy.of(request).may_call

    def grammar(self, tools: tuple[ToolSpec, ...], request: ChatRequest) -> ResponseFormat | None:
        """The grammar of a reply calling one of `tools` or, under `auto`, answering (in
        the caller's `response_format` when the request has one)."""
        return action_response_format(
            tools,
            TurnPolicy.of(request),
            self.options.action_format,
            answer=request.response_format.schema if request.response_format else None,
            parallel=request.parallel_tool_calls,
        )


def engine_settings(
    inner: Backend,
    *,
    action_format: str | None,
    max_retries: int,
    constrained: bool | None,
    refusal_phrases: RefusalPhrases,
    refusal_window: int,
    template_dir: str | None,
    check_values: bool | None,
    min_call_confidence: float,
    max_tokens: int | None,
    repetition: RepetitionLimit | None,
    rules_off: Iterable[str],
    checks: Iterable[Check],
    **contract: Any,
) -> EngineSettings:
    """The settings of `PromptedBackend(inner, ...)`, each checked (`contract`: the rest
    of its arguments, which go to `ContractOptions` as they are)."""
    _check_knobs(inner, constrained, min_call_confidence, max_tokens)
    grammar = constrained is not False and inner.capabilities.json_schema
    if action_format is None:
        action_format = "typed" if grammar else DEFAULT_FORMAT
    folder = None if template_dir is None else str(template_dir)
    rules = Rules().switched(off=rules_off, values=check_values)
    return EngineSettings(
        options=ContractOptions(action_format=action_format, template_dir=folder, **contract),
        policy=RetryPolicy(max_retries, rules, tuple(checks)),
        refusal_phrases=refusal_phrases,
        refusal_window=refusal_window,
        min_call_confidence=min_call_confidence,
        grammar_available=grammar,
        max_tokens=max_tokens,
        repetition=repetition,
    )


def _check_knobs(
    inner: Backend,
    constrained: bool | None,
    min_call_confidence: float,
    max_tokens: int | None,
) -> None:
    if constrained and not inner.capabilities.json_schema:
        raise ConfigurationError(
            f"constrained=True needs a backend with JSON-schema output; {inner.name} has "
            "none: pass constrained=None (use it when available) or False"
        )
    if not 0 <= min_call_confidence <= 1:
        raise ConfigurationError(
            f"min_call_confidence must be between 0 and 1, got {min_call_confidence}"
        )
    if max_tokens is not None and max_tokens < 1:
        raise ConfigurationError(f"max_tokens must be 1 or more, got {max_tokens}")
