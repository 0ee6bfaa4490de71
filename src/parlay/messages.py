"""The items a conversation is made of: messages, tool calls, tool results, and the
`Component` protocol anything else in a context follows. Values only: the `Context` that
holds them (`parlay.context`) and its verbs sit above, so everything that needs a message
(events, the thunk, the codecs) needs nothing of the context.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen
from attrs.validators import instance_of

from parlay.image import Image


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _calls_tuple(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


def _images_tuple(value: Any) -> tuple[Image, ...]:
    return tuple(value)


def _names_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _freeze_arguments(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


@frozen
class SystemMessage:
    content: str
    role = "system"


@frozen
class UserMessage:
    """What the user said: text, and any images after it."""

    content: str
    images: tuple[Image, ...] = field(default=(), converter=_images_tuple)
    role = "user"

    @classmethod
    def of(cls, parts: str | Iterable[str | Image]) -> UserMessage:
        """A message from a str, or from texts and `Image`s (texts joined by newlines)."""
        if isinstance(parts, str):
            return cls(parts)
        items = list(parts)
        texts = [p for p in items if isinstance(p, str)]
        images = [p for p in items if isinstance(p, Image)]
        if len(texts) + len(images) != len(items):
            raise TypeError("a user message is made of str and parlay.Image parts only")
        return cls("\n".join(texts), tuple(images))


@frozen
class ToolCall:
    """A call the model asked for: `arguments` is the parsed JSON object."""

    # Checked: a server may send a number for a name, which no client could call.
    name: str = field(validator=instance_of(str))
    arguments: dict[str, Any] = field(factory=dict, converter=_freeze_arguments, hash=False)
    id: str = field(factory=new_call_id)

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@frozen
class AssistantMessage:
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=(), converter=_calls_tuple)
    role = "assistant"


@frozen
class ToolResult:
    """The outcome of one tool call. `error` is set when the tool could not give an output.

    `value` keeps the Python object the tool returned (not compared, not sent to models);
    `output` is the text the model sees.
    """

    call_id: str
    name: str
    output: str = ""
    error: str | None = None
    value: Any = field(default=None, eq=False, repr=False)
    # Images the tool gave beside its text (a screenshot, a file it read).
    images: tuple[Image, ...] = field(default=(), converter=_images_tuple)
    # Deferred tools this result names (a tool search's `tool_reference` blocks): the
    # history, not the server, says which tools the model is shown from here on.
    references: tuple[str, ...] = field(default=(), converter=_names_tuple)
    role = "tool"

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def content(self) -> str:
        """What the model is shown: the output, or the error spelt out."""
        if self.error is not None:
            return f"Error: {self.error}"
        return self.output


Message = SystemMessage | UserMessage | AssistantMessage | ToolResult
MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResult)


@runtime_checkable
class Component(Protocol):
    """Anything that can stand in a context and render to chat messages.

    `Instruction` and `ModelOutputThunk` are components; users can write their own.
    """

    def as_messages(self) -> tuple[Message, ...]: ...


Item = Message | ToolCall | Component


def add_rendered(out: list[Message], item: Item) -> bool:
    """Append the messages `item` renders to: a loose `ToolCall` joins the assistant
    message before it (or forms one), so every call sits on an assistant turn. False
    when `item` is a model output that was not computed yet (rendering ran it)."""
    if isinstance(item, ToolCall):
        previous = out[-1] if out else None
        if isinstance(previous, AssistantMessage):
            out[-1] = AssistantMessage(previous.content, (*previous.tool_calls, item))
        else:
            out.append(AssistantMessage("", (item,)))
        return True
    if isinstance(item, MESSAGE_TYPES):
        out.append(item)
        return True
    settled = bool(getattr(item, "is_computed", True))  # before rendering runs it
    out.extend(item.as_messages())
    return settled


def rendered(items: Iterable[Item]) -> tuple[Message, ...]:
    """The chat messages `items` render to, as a context of just these items would."""
    out: list[Message] = []
    for item in items:
        add_rendered(out, item)
    return tuple(out)


__all__ = [
    "MESSAGE_TYPES",
    "AssistantMessage",
    "Component",
    "Item",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResult",
    "UserMessage",
    "add_rendered",
    "new_call_id",
    "rendered",
]
