"""The contract's own words, which must never reach a user as an answer.

The format instructions show the model what to write with stand-ins (`"your answer"`,
`"VALUE"`, `TOOL_NAME`...). Small models copy them: after a tool result, SmolLM2 and
Qwen answered `{"final": {"content": "your answer"}}`. Such a reply is no answer; the
engine asks again in words (`placeholder_answer`) or drops it. The continuation that
wraps tool results is parlay's too, save what it quotes: after a tool result, held to
words, Qwen and SmolLM2 answered with its last line ("Decide the next step: call another
tool if the task still needs one, ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from parlay._text import one_line
from parlay.context import Message, ToolResult, UserMessage
from parlay.contract.pieces import RESTATED_CHARS, ContractOptions
from parlay.contract.render import NAME_PLACEHOLDER

# Every stand-in the packaged format and retry templates write (tests check the list
# against the templates).
PLACEHOLDERS = (
    "your answer",
    "your answer to the user",
    "VALUE",
    "ARGUMENT",
    NAME_PLACEHOLDER,
    "why, in a few words",
)
_FOLDED = frozenset(p.lower() for p in PLACEHOLDERS)
_LONGEST = max(len(p) for p in PLACEHOLDERS)
_TRIM = " \t\r\n\"'`.!:;,“”‘’()[]{}<>*_"


def _fold(text: str) -> str:
    return " ".join(text.split()).strip(_TRIM).lower()


def is_placeholder(text: str) -> bool:
    """Whether `text` is nothing but one of the contract's stand-ins."""
    return len(text) <= 4 * _LONGEST and _fold(text) in _FOLDED


def may_become_placeholder(text: str) -> bool:
    """Whether `text`, the start of a reply, could still turn out to be a stand-in."""
    if len(text) > 4 * _LONGEST:
        return False
    folded = " ".join(text.split()).lstrip(_TRIM).lower()
    return not folded or any(p.startswith(folded.rstrip(_TRIM)) for p in _FOLDED)


def own_passages(text: str, quoted: Iterable[str]) -> tuple[str, ...]:
    """The passages of `text`, a message parlay wrote, left between the `quoted` texts
    it holds (tool results, the user's request): its own words."""
    parts = sorted({q for q in quoted if q.strip()}, key=len, reverse=True)
    if not parts:
        return (text,) if text.strip() else ()
    pieces = re.split("|".join(map(re.escape, parts)), text)
    return tuple(piece for piece in pieces if piece.strip())


def continuation_passages(
    messages: Sequence[Message], rendered: Sequence[Message], options: ContractOptions
) -> tuple[str, ...]:
    """parlay's own words in the continuation the model answers now: the last rendered
    message, when the conversation ends with tool results (else none)."""
    if not messages or not isinstance(messages[-1], ToolResult):
        return ()
    if not rendered or not isinstance(rendered[-1], UserMessage):
        return ()
    quoted: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            quoted += [message.content, one_line(message.content, RESTATED_CHARS)]
        elif isinstance(message, ToolResult):
            output = message.output or ""
            quoted += [message.name, message.call_id, output, message.error or ""]
            quoted.append(output[: options.max_result_chars])
    return own_passages(rendered[-1].content, quoted)
