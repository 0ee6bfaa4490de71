"""Images on the wire: each protocol's image parts decoded into `Image` (checked and
bounded before anything goes upstream), and an `Image` encoded in each upstream's form.

Anthropic: `{"type": "image", "source": {"type": "base64", "media_type", "data"}}` or
`{"source": {"type": "url", "url"}}`. Chat completions: `{"type": "image_url",
"image_url": {"url": "data:...;base64,..." or "https://..."}}`. Responses: `{"type":
"input_image", "image_url": "..."}` (a `file_id` names a stored file: refused, as the
proxy keeps no state).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from typing import Any

from parlay.errors import InvalidRequestError
from parlay.image import Image
from parlay.wire._check import field

# The largest image accepted, decoded: Anthropic's own limit per image. The request body's
# limit bounds the sum; this bounds what one image may cost a model's window.
MAX_IMAGE_BYTES = 5 * 1024 * 1024

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def checked(image: Image, where: str, limit: int = MAX_IMAGE_BYTES) -> Image:
    """`image` when its data is base64 within `limit` bytes and its URL is http(s)."""
    if image.url:
        if not image.url.startswith(("https://", "http://")):
            raise InvalidRequestError(
                f"`{where}` must be an http(s) URL or a base64 data: URL, got {image.url[:40]!r}"
            )
        return image
    size = image.size or 0
    if size > limit:
        raise InvalidRequestError(
            f"`{where}` is an image of {size:,} bytes: the limit here is {limit:,} bytes"
        )
    if len(image.data) % 4 or not _BASE64.fullmatch(image.data):
        raise InvalidRequestError(f"`{where}` is not valid base64 image data")
    return image


def _image(make: Any, where: str) -> Image:
    """`make()` as an image, its own refusal named after the field that held it."""
    try:
        image = make()
    except (InvalidRequestError, binascii.Error) as exc:
        raise InvalidRequestError(f"`{where}`: {exc}") from None
    return checked(image, where)


def from_anthropic(block: Mapping[str, Any], where: str) -> Image:
    source = field(block, "source", dict, where=where, required=True)
    kind = source.get("type")
    at = f"{where}.source"
    if kind == "base64":
        media_type = field(source, "media_type", str, where=at, required=True)
        data = field(source, "data", str, where=at, required=True)
        return _image(lambda: Image(media_type, data), f"{at}.data")
    if kind == "url":
        url = field(source, "url", str, where=at, required=True)
        return _image(lambda: Image.from_url(url), f"{at}.url")
    raise InvalidRequestError(
        f"`{at}.type` is {kind!r}: this server reads base64 and url image sources"
    )


def from_chat(part: Mapping[str, Any], where: str) -> Image:
    """A chat-completions `image_url` part (`detail` is accepted and left to the model)."""
    inner = part.get("image_url")
    url = inner if isinstance(inner, str) else None
    if url is None:
        holder = field(part, "image_url", dict, where=where, required=True)
        url = field(holder, "url", str, where=f"{where}.image_url", required=True)
        where = f"{where}.image_url"
    return _image(lambda: Image.from_url(url), f"{where}.url")


def from_responses(part: Mapping[str, Any], where: str) -> Image:
    """A Responses `input_image` part."""
    if part.get("file_id") is not None:
        raise InvalidRequestError(
            f"`{where}.file_id` names a stored file: this proxy keeps no state; send the "
            "image inline as a data: URL in `image_url`"
        )
    url = field(part, "image_url", str, where=where, required=True)
    return _image(lambda: Image.from_url(url), f"{where}.image_url")


# -- encoding for upstreams -------------------------------------------------------------


def anthropic_block(image: Image) -> dict[str, Any]:
    if image.url:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    return {"type": "image", "source": source}


def chat_part(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.as_url}}
