"""Field checks for decoding client requests: every failure names the field and the fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parlay.errors import InvalidRequestError

_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
}


def describe(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_NAMES.get(k, k.__name__) for k in kinds)


def field(
    body: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    *,
    where: str = "",
    required: bool = False,
) -> Any:
    """`body[key]` checked against `kind`; None when absent (or null) and not required."""
    path = f"{where}.{key}" if where else key
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidRequestError(f"`{path}` is required")
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return value
    if bool not in kinds and isinstance(value, bool) and int in kinds:
        raise InvalidRequestError(f"`{path}` must be {describe(kind)}, not a boolean")
    if not isinstance(value, kinds):
        raise InvalidRequestError(f"`{path}` must be {describe(kind)}, got {type(value).__name__}")
    return value


def number(body: Mapping[str, Any], key: str, *, where: str = "") -> float | None:
    value = field(body, key, (int, float), where=where)
    if value is None:
        return None
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        path = f"{where}.{key}" if where else key
        raise InvalidRequestError(f"`{path}` is too large a number") from None


def stop_list(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidRequestError(f"`{path}` must be a string or an array of strings")


def _show(value: float) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"a number of {len(text)} digits"


def bounded_number(
    body: Mapping[str, Any], key: str, low: float, high: float, *, where: str = ""
) -> float | None:
    """`number(body, key)` that must lie in [low, high] (and so be finite)."""
    value = number(body, key, where=where)
    if value is not None and not low <= value <= high:
        path = f"{where}.{key}" if where else key
        raise InvalidRequestError(f"`{path}` must be from {low:g} to {high:g}, got {_show(value)}")
    return value


def bounded_int(
    body: Mapping[str, Any], key: str, low: int, high: int, *, where: str = ""
) -> int | None:
    """`body[key]` as an integer in [low, high]; a boolean is no integer here."""
    value: int | None = field(body, key, int, where=where)
    if value is not None and not low <= value <= high:
        path = f"{where}.{key}" if where else key
        raise InvalidRequestError(f"`{path}` must be from {low:,} to {high:,}, got {_show(value)}")
    return value


def flag(body: Mapping[str, Any], key: str, *, where: str = "") -> bool:
    """An optional boolean, false when absent: `1` or `"yes"` is an error, not true."""
    return bool(field(body, key, bool, where=where))


def called_tool(names: Mapping[str, str], call_id: str, where: str, holder: str) -> str:
    """The tool name of the earlier call a result answers (`names`: call id -> name);
    `holder` says, in the caller's protocol, where such calls are written."""
    name = names.get(call_id)
    if name is None:
        raise InvalidRequestError(f"`{where}` is {call_id!r}, which no earlier {holder} holds")
    return name
