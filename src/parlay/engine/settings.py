"""What the prompted engine's parts read of its configuration, as one value.

`PromptedBackend` builds it once; the turn's opening, the judging and the next attempt's
setup take it instead of the backend, so none imports the backend back.
"""

from __future__ import annotations

from attrs import frozen

from parlay.backends.bounds import RepetitionLimit
from parlay.engine.checks.refusal import RefusalPhrases
from parlay.engine.checks.retry import RetryPolicy
from parlay.engine.checks.rules import VALUE_RULES, Rules
from parlay.engine.contract.pieces import ContractOptions
from parlay.request import ChatRequest


@frozen
class EngineSettings:
    options: ContractOptions
    policy: RetryPolicy
    refusal_phrases: RefusalPhrases
    refusal_window: int
    min_offered_share: float
    # Under `auto`, a first reply's calls go out only when the model put at least this
    # share of its weight on calling rather than answering (`leaning`; 0: always).
    min_call_confidence: float
    # Whether replies may be held to a grammar (the inner backend takes JSON schemas and
    # `constrained` is not False).
    grammar_available: bool
    max_tokens: int | None
    repetition: RepetitionLimit | None

    @property
    def rules(self) -> Rules:
        return self.policy.rules

    @property
    def check_values(self) -> bool:
        """Whether any value rule is on (the value checks are then worked out)."""
        return any(self.rules.on(rule) for rule in VALUE_RULES)

    def uses_constraint(self, request: ChatRequest) -> bool:
        return self.grammar_available and request.tool_choice.mode != "none"
