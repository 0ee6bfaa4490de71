"""Spans for attempts and validations, when the session is traced (`parlay.otel`).

One span an attempt (`parlay.attempt`, the attempt's model calls under it) and one a
validation (`parlay.validation`, a judge's model call under it). A session is traced
when its backend is `parlay.otel.TracedBackend`; that module is looked up, never
imported, so parlay without the `otel` extra never needs OpenTelemetry. The
requirement's text and the reasons are what was said: recorded only with the observer's
`capture_content=True`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parlay.requirements.requirement import Requirement, Validation


def _observer(backend: Any) -> Any:
    otel = sys.modules.get("parlay.otel")
    if otel is None or not isinstance(backend, otel.TracedBackend):
        return None
    return backend.observer


class ValidationSpan:
    """Says how a validation ended on its span (nothing when the session is not traced)."""

    def __init__(self, span: Any = None, capture_content: bool = False) -> None:
        self.span = span
        self.capture_content = capture_content

    def finished(self, validation: Validation) -> None:
        if self.span is None:
            return
        self.span.set_attribute("parlay.validation.passed", validation.passed)
        if validation.usage is not None:
            self.span.set_attribute("gen_ai.usage.input_tokens", validation.usage.prompt_tokens)
            self.span.set_attribute(
                "gen_ai.usage.output_tokens", validation.usage.completion_tokens
            )
        if self.capture_content and validation.reason:
            self.span.set_attribute("parlay.validation.reason", validation.reason)


@contextlib.contextmanager
def validation_span(backend: Any, requirement: Requirement) -> Iterator[ValidationSpan]:
    """A `parlay.validation` span, current while the requirement is checked."""
    observer = _observer(backend)
    if observer is None:
        yield ValidationSpan()
        return
    attributes: dict[str, Any] = {"parlay.validation.by": requirement.judged_by.value}
    if observer.capture_content:
        attributes["parlay.requirement"] = requirement.name
    with observer.tracer.start_as_current_span("parlay.validation", attributes=attributes) as span:
        yield ValidationSpan(span, observer.capture_content)


class AttemptSpan:
    """The span of one attempt, made current where the attempt's work starts."""

    def __init__(self, backend: Any, number: int, strategy: str) -> None:
        observer = _observer(backend)
        self.span: Any = None
        if observer is not None:
            self.span = observer.tracer.start_span(
                "parlay.attempt",
                attributes={"parlay.attempt.number": number, "parlay.strategy": strategy},
            )

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The attempt's span as the current one (for work started inside, not awaited
        across a `yield`)."""
        if self.span is None:
            yield
            return
        from opentelemetry import trace  # present: the session is traced

        with trace.use_span(self.span, end_on_exit=False):
            yield

    def end(self, met: int | None, of: int, error: BaseException | None = None) -> None:
        if self.span is None:
            return
        if met is not None:
            self.span.set_attribute("parlay.attempt.requirements_met", met)
            self.span.set_attribute("parlay.attempt.requirements", of)
            self.span.set_attribute("parlay.attempt.passed", met == of)
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", type(error).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR))
        self.span.end()
