"""Images for a model that reads text only: each becomes a short placeholder in the text of
the message that carried it (`templates/contract/image.j2`), or the request is refused,
as `ContractOptions.images` says.

The placeholder says an image was there, so the model answers that it cannot see it
rather than making up what it shows; a client's session goes on either way.
"""

from __future__ import annotations

from attrs import evolve

from parlay._text import one_line
from parlay.context import Message, ToolResult, UserMessage
from parlay.engine.contract.pieces import ContractOptions, render_template
from parlay.errors import InvalidRequestError
from parlay.image import Image
from parlay.request import ChatRequest

REFUSED = (
    "this request holds an image, and the model behind this server reads text only "
    "(images are refused here; served with images as placeholders, it would be told an "
    "image was there)"
)


def has_images(messages: tuple[Message, ...]) -> bool:
    return any(getattr(m, "images", ()) for m in messages)


def size_text(size: int) -> str:
    """`512 bytes`, `12 KB`, `1.4 MB`: what a reader needs, not the exact count."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def placeholder(image: Image, options: ContractOptions) -> str:
    """The text that stands in one image's place."""
    kind = image.media_type or one_line(image.url, 80)
    size = size_text(image.size) if image.size is not None else ""
    return render_template(options, "contract/image.j2", kind=kind, size=size)


def text_only(request: ChatRequest, options: ContractOptions) -> ChatRequest:
    """`request` with each image made a placeholder in its message's text, or refused."""
    if not has_images(request.messages):
        return request
    if options.images == "refuse":
        raise InvalidRequestError(REFUSED)
    return request.replace(messages=tuple(_placeheld(m, options) for m in request.messages))


def _placeheld(message: Message, options: ContractOptions) -> Message:
    if not isinstance(message, UserMessage | ToolResult) or not message.images:
        return message
    marks = "\n".join(placeholder(image, options) for image in message.images)
    if isinstance(message, UserMessage):
        text = f"{message.content}\n{marks}" if message.content else marks
        return UserMessage(text)
    if message.error is not None:
        return evolve(message, error=f"{message.error}\n{marks}", images=())
    text = f"{message.output}\n{marks}" if message.output else marks
    return evolve(message, output=text, images=())
