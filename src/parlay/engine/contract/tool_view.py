"""A tool as the contract's templates show it to the model."""

from __future__ import annotations

import json
from typing import Any

from parlay.request import ToolSpec


def schema_summary(spec: ToolSpec) -> str:
    """`city (string, required): The city; unit (one of "c", "f")` — short, for a prompt."""
    if "properties" not in spec.parameters:
        return ""  # schema unknown (a tool seen only in the history)
    properties = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or ())
    parts = []
    for key, sub in properties.items():
        sub = sub if isinstance(sub, dict) else {}
        if isinstance(sub.get("enum"), list):
            kind = "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in sub["enum"])
        else:
            raw = sub.get("type", "any")
            kind = "/".join(raw) if isinstance(raw, list) else str(raw)
            if kind == "array" and isinstance(sub.get("items"), dict):
                kind = f"array of {sub['items'].get('type', 'any')}"
        flags = kind + (", required" if key in required else "")
        description = str(sub.get("description") or "").strip().split("\n")[0]
        parts.append(f"{key} ({flags})" + (f": {description}" if description else ""))
    return "; ".join(parts) or "none"


def tool_view(spec: ToolSpec) -> dict[str, Any]:
    """A tool as the templates show it: its name, description and argument summary."""
    return {"name": spec.name, "description": spec.description, "summary": schema_summary(spec)}
