"""Fitting the contract into the model's window: what parlay adds shrinks, the client's
own messages never do.

Tools offered with `defer_loading` are never rendered until the history references
them (`parlay.request.shown_tools`, in every request, fitting or not). When the rendered
contract and a reserve for the reply still do not fit the window, parlay takes back its
own additions, one step at a time and in this order, until they fit:

1. `examples`: the few-shot example turns go;
2. `descriptions`: each tool's description is cut to its first paragraph;
3. `signatures`: descriptions go, leaving each tool's name and arguments.

If even that does not fit, the request is refused with `ContextWindowExceeded`, both
counts in it, and the client (which sees its own protocol's overflow error) compacts.
A count that is only an estimate shrinks the same way but never refuses: the model
server has the last word, and its own overflow error maps to the same error.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Awaitable, Callable, Sequence

from attrs import define, evolve, field, frozen

from parlay.backends.tokens import CountMethod, TokenCount
from parlay.context import Message
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.errors import ContextWindowExceeded
from parlay.request import ChatRequest, ToolSpec

# The reply's reserve when the request sets no max_tokens, and the most of the window a
# reserve may take (Claude Code asks for 64,000 tokens of reply on any model).
DEFAULT_REPLY_RESERVE = 1024
MAX_RESERVE_SHARE = 4  # a reserve takes at most a quarter of the window
# A prompt of at most this many bytes per token of budget fits without being counted:
# no tokenizer makes more tokens than bytes, and templates add a few per message.
TEMPLATE_TOKENS_PER_MESSAGE = 8


class Shrink(enum.Enum):
    """One step of taking back what parlay added (the order is `STEPS`)."""

    EXAMPLES = "examples"
    DESCRIPTIONS = "descriptions"
    SIGNATURES = "signatures"


@frozen
class Fitted:
    """A request made to fit: what is sent, and what was shrunk to get there."""

    request: ChatRequest
    options: ContractOptions
    shrunk: tuple[Shrink, ...] = ()
    tokens: int | None = None  # the final count, when one was made


@frozen
class Budget:
    """The window, the reply's reserve, and how prompts are counted."""

    window: int
    reserve: int
    count: Callable[[Sequence[Message]], Awaitable[TokenCount]]

    @property
    def prompt(self) -> int:
        return self.window - self.reserve


def reply_reserve(request: ChatRequest, default: int | None, window: int) -> int:
    """The request's max_tokens (else `default`, else `DEFAULT_REPLY_RESERVE`), at most a
    quarter of the window."""
    wanted = request.options.max_tokens or default or DEFAULT_REPLY_RESERVE
    return min(wanted, window // MAX_RESERVE_SHARE)


# A step's result: the request and options shrunk, or None when it finds nothing to take.
Changed = tuple[ChatRequest, ContractOptions] | None
Step = Callable[[ChatRequest, ContractOptions], Changed]


def _without_examples(request: ChatRequest, options: ContractOptions) -> Changed:
    return (request, evolve(options, few_shot=False)) if options.few_shot else None


def first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


def _first_paragraphs(request: ChatRequest, options: ContractOptions) -> Changed:
    tools = tuple(evolve(t, description=first_paragraph(t.description)) for t in request.tools)
    return None if tools == request.tools else (request.replace(tools=tools), options)


def signature(spec: ToolSpec) -> ToolSpec:
    """`spec` with no words: its name and its arguments' names and types."""
    properties = spec.parameters.get("properties")
    parameters = dict(spec.parameters)
    if isinstance(properties, dict):
        parameters["properties"] = {
            key: {k: v for k, v in sub.items() if k != "description"}
            if isinstance(sub, dict)
            else sub
            for key, sub in properties.items()
        }
    return evolve(spec, description="", parameters=parameters)


def _signatures(request: ChatRequest, options: ContractOptions) -> Changed:
    tools = tuple(signature(t) for t in request.tools)
    return None if tools == request.tools else (request.replace(tools=tools), options)


# In order; a step that leaves the request as it was (None) costs no count.
STEPS: tuple[tuple[Shrink, Step], ...] = (
    (Shrink.EXAMPLES, _without_examples),
    (Shrink.DESCRIPTIONS, _first_paragraphs),
    (Shrink.SIGNATURES, _signatures),
)


async def fit(
    request: ChatRequest, options: ContractOptions, *, constrained: bool, budget: Budget
) -> Fitted:
    """`request` and `options` shrunk (`STEPS`) until the contract fits `budget`; raises
    `ContextWindowExceeded` when nothing more can go and the count is exact."""
    fitted = Fitted(request, options)
    count = await _tokens(fitted, constrained, budget)
    for shrink, step in STEPS:
        if count is None or count.tokens <= budget.prompt:
            break
        changed = step(fitted.request, fitted.options)
        if changed is None:
            continue
        fitted = Fitted(*changed, shrunk=(*fitted.shrunk, shrink))
        count = await _tokens(fitted, constrained, budget)
    note_fit(fitted.shrunk, count, budget.window)
    if count is None:
        return fitted
    # An estimate never refuses: the model server has the last word.
    if count.tokens > budget.prompt and count.method is not CountMethod.ESTIMATE:
        raise too_long(count.tokens, budget)
    return evolve(fitted, tokens=count.tokens)


async def _tokens(fitted: Fitted, constrained: bool, budget: Budget) -> TokenCount | None:
    """The contract's count, None when it surely fits without counting."""
    messages = render_contract(fitted.request, fitted.options, constrained=constrained).messages
    # (One more message's worth for the generation prompt.)
    size = sum(len(m.content.encode()) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
    size += TEMPLATE_TOKENS_PER_MESSAGE
    if size <= budget.prompt:
        return None
    return await budget.count(messages)


def too_long(tokens: int, budget: Budget) -> ContextWindowExceeded:
    """The overflow error, worded as clients parse it ("prompt is too long: N tokens >
    M maximum" makes Claude Code compact)."""
    message = (
        f"prompt is too long: {tokens} tokens > {budget.prompt} maximum (the model's "
        f"context window is {budget.window} tokens, {budget.reserve} of them kept for the "
        "reply; parlay's own examples and tool descriptions were already left out)"
    )
    return ContextWindowExceeded(message, tokens=tokens, window=budget.prompt)


@define
class FitNote:
    """What fitting found for the request being served, for its response headers: what
    was shrunk, the prompt's tokens (None: small enough not to be counted) and how they
    were counted, and the window."""

    shrunk: list[str] = field(factory=list)
    tokens: int | None = None
    counted: str | None = None
    window: int | None = None


# The server puts a note here before the backend runs (the backend's task sees the same
# object); outside the server there is none and nothing is noted.
fit_here: contextvars.ContextVar[FitNote | None] = contextvars.ContextVar(
    "parlay_fit", default=None
)


def note_fit(shrunk: Sequence[Shrink], count: TokenCount | None, window: int) -> None:
    note = fit_here.get()
    if note is None:
        return
    note.shrunk.extend(s.value for s in shrunk if s.value not in note.shrunk)
    note.window = window
    if count is not None:
        note.tokens, note.counted = count.tokens, count.method.value
