"""What happened on the way to a result: contract, parsing, retries, refusals."""

from __future__ import annotations

from attrs import frozen

from parlay.display import diagnostics_html, page


@frozen
class RetryRecord:
    """One retry the prompted engine made, and why."""

    reason: str
    detail: str = ""


@frozen
class Diagnostics:
    """Observations attached to every result (`ModelOutputThunk.diagnostics`)."""

    contract_injected: bool = False
    action_format: str | None = None
    tool_history_detected: bool = False
    calls_parsed: int = 0
    retries: tuple[RetryRecord, ...] = ()
    refusal: str | None = None
    constrained: bool = False
    notes: tuple[str, ...] = ()
    # Where the conversation stood (`contract.state.ToolState` value) and how the prompted
    # engine streamed the reply: "live", "hybrid" (text live, calls held) or "buffered".
    tool_state: str | None = None
    streaming: str | None = None
    # What a reply kept repeating when the repetition guard stopped it
    # (`parlay.backends.bounds`); the reply then finished with reason "length".
    repetition: str | None = None
    # The engine's rules that acted on this reply, in order (`parlay.engine.checks.rules`).
    rules: tuple[str, ...] = ()
    # Where the first reply wrote its kind under a grammar, the share of the model's weight
    # on answering in words rather than calling (`parlay.engine.checks.confidence`); None
    # when the backend reported no alternatives there.
    answer_share: float | None = None
    # Tools the model called that were not offered, or that tool_choice ruled out: their
    # calls were dropped (`parlay.backends.offered`), and a reply left with none became a
    # plain answer.
    unoffered_tools: tuple[str, ...] = ()
    # What parlay took back of its own additions so the request fit the model's window,
    # in order (`parlay.engine.contract.fit.Shrink` values: "examples", "descriptions"...).
    shrunk: tuple[str, ...] = ()

    def _repr_html_(self) -> str:
        """A table of what happened, for notebooks (`parlay.display`)."""
        return page(diagnostics_html(self))
