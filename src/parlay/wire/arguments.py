"""Tool-call arguments as JSON text: parsed strictly first, repaired when broken."""

from __future__ import annotations

import json
from typing import Any

import json_repair

# Repair reads broken JSON at about 4 µs a character, and this runs on the proxy's event
# loop: longer text that is not JSON is reported, not repaired.
MAX_REPAIR_CHARS = 16_384
# Repair of many open brackets is slower than linear (10,000 `{` took 1 s).
MAX_REPAIR_OPENS = 256


def parse_arguments(text: str | None) -> tuple[dict[str, Any], str | None]:
    """The argument object and, when the JSON had to be repaired or was unusable, a note.

    Never raises: text that is not an object even after repair gives `{}` and a note.
    """
    if text is None or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # bad JSON, a number of thousands of digits, depth
        if len(text) > MAX_REPAIR_CHARS or text.count("{") + text.count("[") > MAX_REPAIR_OPENS:
            return {}, f"arguments are not JSON, and too long to repair: {text[:200]!r}"
        try:
            value = json_repair.loads(text)
        except Exception:  # json_repair is tolerant but not total
            return {}, f"arguments are not JSON: {text[:200]!r}"
        if isinstance(value, dict):
            return value, f"repaired arguments JSON: {text[:200]!r}"
        return {}, f"arguments are not a JSON object: {text[:200]!r}"
    if isinstance(value, str):
        # Some servers double-encode: a JSON string holding the object.
        inner, note = parse_arguments(value)
        return inner, note or "arguments were a JSON string holding JSON"
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object: {text[:200]!r}"
    return value, None
