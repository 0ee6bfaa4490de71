"""The exception hierarchy: every error parlay raises is a `ParlayError`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parlay.context import Context, ToolCall


class ParlayError(Exception):
    """Base class of every error raised by parlay."""


class ToolDefinitionError(ParlayError, TypeError):
    """A Python function cannot be turned into a tool (names the parameter at fault)."""


class ToolLoopError(ParlayError):
    """The tool loop of a turn stopped before the model answered.

    `context` holds the whole history so far, tool calls and results included, so
    nothing the model or the tools produced is lost.
    """

    def __init__(self, message: str, *, context: Context) -> None:
        super().__init__(message)
        self.context = context


class ToolChainLimitError(ToolLoopError):
    """The tool loop asked for more rounds than the chain limit allows."""

    def __init__(self, message: str, *, context: Context, limit: int) -> None:
        super().__init__(message, context=context)
        self.limit = limit


class ToolCallTruncatedError(ToolLoopError):
    """The reply stopped at its token limit (or the repetition guard) while the model was
    writing a call, so that call's arguments may be cut short. The loop runs none of the
    round's calls; `context` ends with the reply that made them, `call` is the cut one.
    A larger `max_tokens` is the usual way out."""

    def __init__(self, message: str, *, context: Context, call: ToolCall) -> None:
        super().__init__(message, context=context)
        self.call = call


class TurnCancelledError(ParlayError):
    """A turn stopped before it finished (`ModelOutputThunk.cancel()`, or Ctrl-C on the
    command line). Observers see it as the turn's error, with the rounds that finished
    before the stop (their tools ran); the thunk's consumers get `asyncio.CancelledError`."""


class ThunkError(ParlayError):
    """A `ModelOutputThunk` was used in a way that cannot work (say, forced from its own loop)."""


class ConfigurationError(ParlayError):
    """Parlay was asked for something that is not installed or not configured."""


class BackendError(ParlayError):
    """The model backend failed."""


class BackendConnectionError(BackendError):
    """The backend could not be reached (refused, DNS, reset)."""


class BackendTimeoutError(BackendError):
    """The backend did not answer in time."""


class BackendStatusError(BackendError):
    """The backend answered with an HTTP error status."""

    def __init__(self, message: str, *, status_code: int, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class BackendRateLimitError(BackendStatusError):
    """The backend answered 429. `retry_after` is its `Retry-After` header as sent (seconds
    or an HTTP date), None when it sent none."""

    def __init__(
        self, message: str, *, status_code: int = 429, body: Any = None, retry_after: str | None
    ) -> None:
        super().__init__(message, status_code=status_code, body=body)
        self.retry_after = retry_after


class BackendSchemaRejectedError(BackendStatusError):
    """The backend refused the request (400/422) because of its JSON schema or grammar: a
    constrained request may be sent again without the constraint."""


class BackendProtocolError(BackendError):
    """The backend answered something that does not follow its protocol (a cut stream, bad JSON)."""


class BackendStreamCutError(BackendProtocolError):
    """The backend's stream stopped before the reply was finished (connection cut)."""


# What reading a backend's JSON of another shape than its protocol's raises (`.get` on a
# list, `+` of a str and an int, `int("x")` or `int(1e400)`, a missing key or index, an
# unhashable key, nesting deeper than Python recurses): where parlay reads such data,
# these become a `BackendProtocolError`, or the answer is taken as telling nothing.
SHAPE_ERRORS = (
    AttributeError, TypeError, ValueError, KeyError, IndexError, OverflowError, RecursionError,
)  # fmt: skip


class InvalidRequestError(ParlayError, ValueError):
    """A request (from user code or a proxy client) is malformed; the message says what to fix."""


class ContextWindowExceeded(InvalidRequestError):
    """A request does not fit the model's context window, even with what parlay adds
    (examples, tool descriptions) shrunk as far as it goes; the caller's own messages were
    not cut. `tokens`: the prompt's count; `window`: what a prompt may take there (the
    window less the reply's reserve); either is None when a model server did not say.
    Clients act on it as on their provider's own overflow error: they compact and retry."""

    def __init__(
        self, message: str, *, tokens: int | None, window: int | None, detail: str = ""
    ) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.window = window
        self.detail = detail  # a model server's own words (credentials masked), for the log


class TemplateFolderNotAllowedError(InvalidRequestError):
    """A context being loaded names a template folder (an `Instruction`'s `template_dir`)
    that the caller did not allow: a file never chooses where templates come from. Pass
    the folder in `template_dirs=`, or `trust_template_dirs=True` for a file you trust."""


class TemplateSecurityError(ParlayError):
    """A template tried to leave Jinja2's sandbox (reach `__class__`, `__globals__`, call
    an unsafe function or change a value it was given). The template is at fault, not
    its variables: nothing ran."""


class StoreError(ParlayError):
    """The SQLite log cannot be opened, migrated or written (the message names the file)."""


class MCPServerError(ParlayError):
    """An MCP server could not be started, did not answer in time, or failed its start-up.

    Raised when a server is started (`parlay.mcp.MCPTools`); the message names the server
    and ends with what it last wrote on stderr, if anything. A server that fails during a
    session does not raise: each call to it is an error result the model sees.
    """


class UndescribedToolWarning(UserWarning):
    """A tool was made from a function without a docstring: the model sees no description."""


class MCPToolSkippedWarning(UserWarning):
    """An MCP server listed a tool parlay cannot offer (say, an invalid input schema): that
    tool is left out, the server's other tools load."""
