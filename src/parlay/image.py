"""An image a message carries beside its text: inline (media type and base64 data) or by URL.

A `UserMessage` and a `ToolResult` hold images in `images`, after their text. Native
backends pass them to the model in its own form; the prompt-contract engine, in front of
a model that reads text only, puts a short placeholder in their place (or refuses them).
"""

from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path
from typing import Any

from attrs import field, frozen

from parlay.errors import InvalidRequestError

_DATA_PREFIX = "data:"


def _short(data: str) -> str:
    return f"<{len(data)} base64 characters>"


@frozen
class Image:
    """One image: `media_type` ("image/png") and base64 `data`, or a `url` the model
    fetches itself (`media_type` may then be empty). Build one with `Image.from_path`,
    `Image.from_bytes` or `Image.from_url` (which reads a `data:` URL inline)."""

    media_type: str = ""
    data: str = field(default="", repr=_short)
    url: str = ""

    def __attrs_post_init__(self) -> None:
        if bool(self.data) == bool(self.url):
            raise InvalidRequestError("an image has either base64 data or a URL, not both")
        if self.data and not self.media_type.startswith("image/"):
            raise InvalidRequestError(
                f"an inline image needs an image/* media type, got {self.media_type!r}"
            )

    @classmethod
    def from_bytes(cls, raw: bytes, media_type: str) -> Image:
        return cls(media_type, base64.b64encode(raw).decode("ascii"))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> Image:
        """The image in a file; its media type guessed from the name unless given."""
        kind = media_type or mimetypes.guess_type(str(path))[0] or ""
        if not kind.startswith("image/"):
            raise InvalidRequestError(f"{path}: not a known image type; pass media_type=")
        return cls.from_bytes(Path(path).read_bytes(), kind)

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An http(s) URL as it is; a base64 `data:` URL as its media type and data."""
        if not url.startswith(_DATA_PREFIX):
            return cls(url=url)
        header, comma, data = url[len(_DATA_PREFIX) :].partition(",")
        media_type, _, encoding = header.partition(";")
        if not comma or encoding != "base64":
            raise InvalidRequestError("an image data: URL must be data:image/...;base64,...")
        return cls(media_type, data)

    @property
    def size(self) -> int | None:
        """The decoded size of inline data, in bytes (worked out, not decoded); None for a URL."""
        if not self.data:
            return None
        return len(self.data) * 3 // 4 - len(self.data) + len(self.data.rstrip("="))

    @property
    def as_url(self) -> str:
        """The image as one URL: its own, or a `data:` URL holding it."""
        return self.url or f"{_DATA_PREFIX}{self.media_type};base64,{self.data}"


def images_of(message: Any) -> tuple[Image, ...]:
    """The images a message carries (none for a message kind that carries none)."""
    return tuple(getattr(message, "images", ()))
