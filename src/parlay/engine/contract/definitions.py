"""Named subschemas (`$defs`) in a grammar made of several schemas.

JSON Schema reads `$ref: #/$defs/Address` from the root of the whole schema, so when the
engine puts the caller's answer schema and each tool's parameters side by side under
`anyOf`, their named subschemas must move to the root; and two of them naming different
subschemas alike (two tools each with an `Item` model) must not overwrite each other.
"""

from __future__ import annotations

from typing import Any

# Where JSON Schema keeps named subschemas; a `$ref` points into them from the root.
DEFINITIONS = ("$defs", "definitions")


def distinct(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The schemas, each later one whose subschema is named like a different one before it
    renamed there (`Item` → `Item_2`), its `$ref`s with it; the same subschema under the
    same name stays shared. Schemas needing no renaming are returned as they were."""
    taken: dict[tuple[str, str], Any] = {}
    out = []
    for schema in schemas:
        renames: dict[str, str] = {}
        for key in DEFINITIONS:
            defs = schema.get(key)
            if not isinstance(defs, dict):
                continue
            for name, sub in defs.items():
                if taken.get((key, name), sub) != sub:
                    new = _free_name(key, name, taken, defs)
                    renames[f"#/{key}/{name}"] = f"#/{key}/{new}"
                    name = new
                taken[(key, name)] = sub
        out.append(_renamed(schema, renames) if renames else schema)
    return out


def _free_name(key: str, name: str, taken: dict[tuple[str, str], Any], own: dict[str, Any]) -> str:
    n = 2
    while (key, f"{name}_{n}") in taken or f"{name}_{n}" in own:
        n += 1
    return f"{name}_{n}"


def _renamed(node: Any, renames: dict[str, str]) -> Any:
    """`node` with every `$ref` in `renames` pointed at its new name, and those
    subschemas stored under it."""
    if isinstance(node, list):
        return [_renamed(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _renamed_ref(value, renames)
        elif key in DEFINITIONS and isinstance(value, dict):
            out[key] = {
                _renamed_ref(f"#/{key}/{name}", renames).rsplit("/", 1)[1]: _renamed(sub, renames)
                for name, sub in value.items()
            }
        else:
            out[key] = _renamed(value, renames)
    return out


def _renamed_ref(ref: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        if ref == old or ref.startswith(old + "/"):
            return new + ref[len(old) :]
    return ref


def at_root(options: list[dict[str, Any]], parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """The options as one schema, with their named subschemas lifted to its root (left
    inside an `anyOf` option, a `$ref` would point at nothing). The tools' parameters keep
    theirs (a recursive model's cannot be inlined); a copy goes to the root too. Names are
    expected `distinct` already."""
    found: dict[str, dict[str, Any]] = {}
    for schema in [*options, *parameters]:
        for key in DEFINITIONS:
            if isinstance(schema.get(key), dict):
                found.setdefault(key, {}).update(schema[key])
    bare = [{k: v for k, v in option.items() if k not in DEFINITIONS} for option in options]
    schema = bare[0] if len(bare) == 1 else {"anyOf": bare}
    return {**schema, **found}
