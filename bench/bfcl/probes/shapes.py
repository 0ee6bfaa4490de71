"""What the probes share: toolproxy's three reply formats as a grammar, and reading
and scoring a reply in either shape."""

from __future__ import annotations

import json
from typing import Any

from bench.bfcl.checker import check
from bench.bfcl.data import Question


def typed_grammar(tools: Any, min_several: int = 1) -> dict[str, Any]:
    """toolproxy's three formats, `"type"` first; `min_several`: entries the plural form
    must hold."""
    call = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool_name": {"const": t.name}, "arguments": t.parameters},
                "required": ["tool_name", "arguments"],
            }
            for t in tools
        ]
    }
    one = {"type": {"const": "tool_call"}, "tool": call}
    several = {
        "type": {"const": "tool_calls"},
        "tools": {"type": "array", "items": call, "minItems": min_several},
    }
    final = {"type": {"const": "final"}, "content": {"type": "string"}}
    return {
        "anyOf": [
            {"type": "object", "properties": p, "required": list(p)} for p in (one, several, final)
        ]
    }


def calls_in(text: str) -> list[tuple[str, Any]]:
    """The calls of a reply in parlay's json shape or toolproxy's type-first one."""
    try:
        obj = json.loads(text[text.find("{") : text.rfind("}") + 1])
        if "tool_call" in obj or "tool_calls" in obj:
            acts = obj.get("tool_calls") or [obj["tool_call"]]
            return [(a["tool_name"], a.get("arguments", {})) for a in acts]
        if "type" in obj:
            acts = obj.get("tools") or ([obj["tool"]] if "tool" in obj else [])
            return [(a["tool_name"], a.get("arguments", {})) for a in acts]
        acts = obj.get("actions") or ([obj["action"]] if "action" in obj else [])
        return [(a["tool"], a.get("args", {})) for a in acts]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def scored(q: Question, text: str) -> tuple[bool, int]:
    """Whether the reply is right by BFCL's rule, and how many calls it made (printed)."""
    calls = calls_in(text)
    valid = check(q.category, q.functions, calls, q.ground_truth).valid
    shown = text[:300].replace("\n", " ")
    print(q.id, len(calls), "expected", len(q.ground_truth), valid, shown)
    return valid, len(calls)


def keyed_grammar(tools: Any, min_several: int = 1) -> dict[str, Any]:
    """The same three formats decided by the first key: `tool_call`, `tool_calls`, `final`."""
    call = typed_grammar(tools)["anyOf"][0]["properties"]["tool"]
    shapes = (
        {"tool_call": call},
        {"tool_calls": {"type": "array", "items": call, "minItems": min_several}},
        {"final": {"type": "string"}},
    )
    return {"anyOf": [{"type": "object", "properties": p, "required": list(p)} for p in shapes]}


def counted(schema: dict[str, Any], most: int = 6) -> dict[str, Any]:
    """The engine's typed grammar with `"count": N` after `"type": "tool_calls"` and the
    list held to N entries, for N from 2 to `most`."""
    options = []
    for option in schema.get("anyOf", [schema]):
        props = option.get("properties", {})
        if props.get("type", {}).get("const") != "tool_calls":
            options.append(option)
            continue
        for n in range(2, most + 1):
            tools = {**props["tools"], "minItems": n, "maxItems": n}
            options.append(
                {
                    "type": "object",
                    "properties": {"type": props["type"], "count": {"const": n}, "tools": tools},
                    "required": ["type", "count", "tools"],
                }
            )
    return {**schema, "anyOf": options} if "anyOf" in schema else options[0]
