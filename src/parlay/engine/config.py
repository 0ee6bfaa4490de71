"""What a user sets of the prompted engine, as values checked where they are made.

`EngineConfig` is everything `PromptedBackend` takes; `EngineChanges` is the part the
command line (`parlay prompt`, `chat`, `serve`) and the environment set, each None where
the backend's own setting stands. Both check a value with the same function, so a value
out of range is refused once, with one message, from Python, a flag or a variable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import Attribute, field, frozen

from parlay.backends.bounds import ATTEMPT_MAX_TOKENS, RepetitionLimit
from parlay.engine.checks.confidence import DEFAULT_CALL_CONFIDENCE
from parlay.engine.checks.refusal import DEFAULT_REFUSALS, RefusalPhrases
from parlay.engine.checks.retry import DEFAULT_CHECKS, Check
from parlay.engine.checks.rules import RULES, unknown_rules
from parlay.engine.contract.pieces import (
    DEFAULT_MAX_RESULT_CHARS,
    ActionFormat,
    ImageHandling,
    as_action_format,
    as_image_handling,
)
from parlay.errors import ConfigurationError


def _format(value: str | None) -> ActionFormat | None:
    return None if value is None else as_action_format(value)


def _images(value: str | None) -> ImageHandling | None:
    return None if value is None else as_image_handling(value)


def _folder(value: object) -> str | None:
    return None if value is None else str(value)


def _names(value: Iterable[str] | str | None) -> tuple[str, ...]:
    """Rule names from a list, or from one comma-separated string (an environment's)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    return tuple(name.strip() for name in value if name.strip())


def _rule_set(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


def _checks(checks: Iterable[Check]) -> tuple[Check, ...]:
    return tuple(checks)


def _retries(_: object, attribute: Attribute[Any], value: int | None) -> None:
    if value is not None and value < 0:
        raise ConfigurationError(f"max_retries must be 0 or more, got {value}")


def _confidence(_: object, attribute: Attribute[Any], value: float | None) -> None:
    if value is not None and not 0 <= value <= 1:
        raise ConfigurationError(
            f"min_call_confidence must be between 0 and 1 (0 switches it off), got {value}"
        )


def _max_tokens(_: object, attribute: Attribute[Any], value: int | None) -> None:
    if value is not None and value < 1:
        raise ConfigurationError(f"max_tokens must be 1 or more, got {value}")


def _check_rules(names: Iterable[str], checks: Iterable[Check] = ()) -> None:
    own = [check.name for check in checks if check.name not in RULES]
    if unknown := unknown_rules(names, own):
        known = ", ".join([*RULES, *own])
        raise ConfigurationError(f"unknown rule(s) {', '.join(unknown)}; the rules: {known}")


@frozen
class EngineConfig:
    """The prompted engine's settings, as `PromptedBackend(inner, ...)` takes them.

    - `action_format`: "fenced", "json" or "typed" (the parser reads all of them);
      None: "typed" when replies can be held to a grammar, else "fenced".
    - `max_retries`: how many times a failed reply is asked again.
    - `constrained`: hold replies to a JSON schema of valid actions (not under
      `tool_choice="none"`); None: when the inner backend takes one, else free text.
    - `few_shot`, `max_examples`: example turns made from the request's tools.
    - `refusal_phrases`, `refusal_window`: what reads as a refusal, and how much text
      is held under `auto` before it streams.
    - `template_dir`: your templates, searched before parlay's own.
    - `max_result_chars`, `thought_limit`: where tool outputs and thoughts are cut.
    - `restate_request`: see `ContractOptions`.
    - `check_values`: switch the value rules (`contract.grounding`) on or off; None: as shipped.
    - `min_call_confidence`: the one knob trading calls for abstentions. Under `auto`
      and a grammar, a call goes out only when the model was at least this sure of it
      (`checks.confidence`): of calling rather than answering, where the format writes
      a reply's kind (first replies), and of the tool it names, at each token of the
      name. Below it the model is asked for words. 0: off.
    - `max_tokens`: each attempt's budget when the request sets none.
    - `checks`, `rules_off`: the checks a reply passes, in order, and rules switched off
      (parlay's or your checks' names).
    - `repetition`: stop an attempt caught in a loop (`RepetitionLimit`; None: off).
    - `images`: "placeholder" (each image becomes a line saying an image was there and
      that this model reads text only) or "refuse" (an `InvalidRequestError`).

    The defaults and what they cost: bench/results/bfcl-dev.md.
    """

    action_format: ActionFormat | None = field(default=None, converter=_format)
    max_retries: int = field(default=2, validator=_retries)
    constrained: bool | None = None
    few_shot: bool = True
    refusal_phrases: RefusalPhrases = DEFAULT_REFUSALS
    template_dir: str | None = field(default=None, converter=_folder)
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    thought_limit: int = 200
    refusal_window: int = 200
    max_examples: int = 4
    restate_request: bool = True
    check_values: bool | None = None
    min_call_confidence: float = field(default=DEFAULT_CALL_CONFIDENCE, validator=_confidence)
    max_tokens: int | None = field(default=ATTEMPT_MAX_TOKENS, validator=_max_tokens)
    repetition: RepetitionLimit | None = field(factory=RepetitionLimit)
    rules_off: frozenset[str] = field(default=frozenset(), converter=_rule_set)
    checks: tuple[Check, ...] = field(default=DEFAULT_CHECKS, converter=_checks)
    images: ImageHandling = field(default="placeholder", converter=as_image_handling)

    def __attrs_post_init__(self) -> None:
        _check_rules(self.rules_off, self.checks)


@frozen
class EngineChanges:
    """The engine settings a command line or an environment gives, on top of a backend's
    own (None, or no rules: the backend's own setting stands); `parlay prompt`, `chat`
    and `serve` take each as the same flag (`parlay.cli.engine_options`)."""

    action_format: ActionFormat | None = field(default=None, converter=_format)
    max_retries: int | None = field(default=None, validator=_retries)
    min_call_confidence: float | None = field(default=None, validator=_confidence)
    rules_off: tuple[str, ...] = field(default=(), converter=_names)
    images: ImageHandling | None = field(default=None, converter=_images)

    def __attrs_post_init__(self) -> None:
        _check_rules(self.rules_off)

    def given(self) -> dict[str, Any]:
        """The settings given, by `EngineConfig`'s names."""
        given = {
            "action_format": self.action_format,
            "max_retries": self.max_retries,
            "min_call_confidence": self.min_call_confidence,
            "rules_off": self.rules_off or None,
            "images": self.images,
        }
        return {name: value for name, value in given.items() if value is not None}
