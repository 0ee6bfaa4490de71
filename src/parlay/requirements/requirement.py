"""Requirements, and what checking one gave: a `Validation`.

A requirement is a sentence, a Python function of the output, or both:

- `req("Mention the sea")`: shown to the model in the instruction and judged by a model
  (the session's backend, or a `judge=` one) from a template users can override;
- `req("At most 20 words", lambda text: len(text.split()) <= 20)`: shown to the model,
  checked by the function;
- `check("No apology", fn)`: checked, never shown to the model (Mellea's `check`);
- a plain string is `req(string)`.

A function takes the output's text and returns True (passed), False (failed), or a
pair `(passed, reason)`; `simple_validate(fn, reason=...)` gives a bare predicate the
reason it failed with.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from attrs import field, frozen

from parlay.events import Usage

ValidateFn = Callable[[str], Any]
"""A function of the output's text: True, False, or `(passed, reason)`."""


class JudgedBy(enum.Enum):
    """Who decided a validation: the requirement's function, or a model as judge."""

    CODE = "code"
    MODEL = "model"


@frozen
class Requirement:
    """One thing an output must satisfy.

    `description` is the sentence (shown to the model when `shown`, and judged by a model
    when there is no `validate` function); `validate` checks the output's text in code.
    """

    description: str | None = None
    validate: ValidateFn | None = field(default=None, eq=False)
    shown: bool = True

    def __attrs_post_init__(self) -> None:
        if not self.description and self.validate is None:
            raise ValueError("a requirement needs a description, a validate function, or both")

    @property
    def name(self) -> str:
        """How the requirement is named in results and repair messages."""
        if self.description:
            return self.description
        return getattr(self.validate, "__name__", "requirement")

    @property
    def judged_by(self) -> JudgedBy:
        return JudgedBy.MODEL if self.validate is None else JudgedBy.CODE

    @property
    def in_instruction(self) -> bool:
        """Whether the instruction lists it for the model."""
        return self.shown and bool(self.description)


def req(description: str | None = None, validate: ValidateFn | None = None) -> Requirement:
    """A requirement shown to the model: judged by a model, or checked by `validate`."""
    return Requirement(description, validate)


def check(description: str | None = None, validate: ValidateFn | None = None) -> Requirement:
    """A requirement that is checked but never shown to the model."""
    return Requirement(description, validate, shown=False)


def simple_validate(
    predicate: Callable[[str], bool], reason: str | None = None
) -> Callable[[str], tuple[bool, str]]:
    """`predicate` as a validate function that fails with `reason` (default: its name)."""
    said = reason or f"{getattr(predicate, '__name__', 'the check')} returned False"

    def validate(text: str) -> tuple[bool, str]:
        passed = bool(predicate(text))
        return passed, "" if passed else said

    validate.__name__ = getattr(predicate, "__name__", "validate")
    return validate


@frozen
class Validation:
    """What checking one requirement against one output gave.

    `passed` and the `reason` (a judge's words, or the function's); `by` says whether
    code or a model decided; `usage` and `duration_ms` are what it cost (a judge's
    tokens; None for code). `bool(validation)` is `passed`.
    """

    requirement: Requirement
    passed: bool
    reason: str = ""
    by: JudgedBy = JudgedBy.CODE
    usage: Usage | None = None
    duration_ms: float = 0.0

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        because = f": {self.reason}" if self.reason else ""
        return f"[{mark} by {self.by.value}] {self.requirement.name}{because}"


def as_requirement(value: Requirement | str) -> Requirement:
    if isinstance(value, Requirement):
        return value
    if isinstance(value, str):
        return req(value)
    raise TypeError(
        f"a requirement is a string or a parlay.requirements.Requirement, "
        f"not {type(value).__name__}"
    )


def as_requirements(values: Iterable[Requirement | str]) -> tuple[Requirement, ...]:
    """Plain strings become judged requirements."""
    return tuple(as_requirement(v) for v in values)


def outcome(requirement: Requirement, returned: Any) -> tuple[bool, str]:
    """What a validate function's return value says: passed, and why not."""
    if isinstance(returned, bool):
        return returned, ""
    if isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], bool):
        return returned[0], str(returned[1])
    raise TypeError(
        f"the validate function of requirement {requirement.name!r} returned "
        f"{type(returned).__name__}; return True, False or (passed, reason)"
    )
