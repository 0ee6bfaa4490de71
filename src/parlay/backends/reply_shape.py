"""An upstream's reply that is JSON but not of the shape its protocol promises (a list
where an object belongs, a number for a tool's name) is the upstream's protocol error,
not a crash of parlay's. The decoders read the shape they expect; what reading a wrong
one raises becomes, here, a `BackendProtocolError` naming the upstream and the data (a
502 for a proxy's client, not a 500), so that no decoder needs a check on every field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from parlay.backends._http import mask_secrets
from parlay.errors import SHAPE_ERRORS, BackendProtocolError, ParlayError
from parlay.events import Event


def decoded(
    decode: Callable[[], Iterable[Event]], source: str, data: Any, secrets: tuple[str, ...] = ()
) -> list[Event]:
    """The events `decode()` reads from `data`, which `source` sent; a protocol error
    (its excerpt of `data` without `secrets`) when `data` is not of the shape the decoder
    reads."""
    try:
        return list(decode())
    except ParlayError:
        raise
    except SHAPE_ERRORS as exc:
        excerpt = mask_secrets(f"{type(exc).__name__}: {exc}; {str(data)[:200]!r}", secrets)
        raise BackendProtocolError(
            f"{source} sent a reply that does not follow its protocol ({excerpt})"
        ) from exc
