"""What the prompted engine's parts read of its configuration, as one value.

`PromptedBackend` builds it once from its `EngineConfig` and the inner backend; the turn,
the judging and the next attempt read it instead of the backend, so none imports the
backend back.
"""

from __future__ import annotations

from attrs import frozen

from parlay.backends.base import Backend
from parlay.backends.bounds import RepetitionLimit
from parlay.engine.checks.refusal import RefusalPhrases
from parlay.engine.checks.retry import RetryPolicy
from parlay.engine.checks.rules import VALUE_RULES, Rules
from parlay.engine.config import EngineConfig
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


def engine_settings(inner: Backend, config: EngineConfig) -> EngineSettings:
    """What `config` comes to in front of `inner` (its ranges were checked when it was
    made; here only what depends on `inner`)."""
    if config.constrained and not inner.capabilities.json_schema:
        raise ConfigurationError(
            f"constrained=True needs a backend with JSON-schema output; {inner.name} has "
            "none: pass constrained=None (use it when available) or False"
        )
    grammar = config.constrained is not False and inner.capabilities.json_schema
    action_format = config.action_format or ("typed" if grammar else DEFAULT_FORMAT)
    rules = Rules().switched(off=config.rules_off, values=config.check_values)
    options = ContractOptions(
        action_format=action_format,
        few_shot=config.few_shot,
        max_examples=config.max_examples,
        max_result_chars=config.max_result_chars,
        thought_limit=config.thought_limit,
        restate_request=config.restate_request,
        template_dir=config.template_dir,
        images=config.images,
    )
    return EngineSettings(
        options=options,
        policy=RetryPolicy(config.max_retries, rules, config.checks),
        refusal_phrases=config.refusal_phrases,
        refusal_window=config.refusal_window,
        min_call_confidence=config.min_call_confidence,
        grammar_available=grammar,
        max_tokens=config.max_tokens,
        repetition=config.repetition,
    )
