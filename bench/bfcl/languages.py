"""What BFCL does per language: the hint in each description, and Java/JavaScript values.

BFCL shows every function-calling model its functions after
`bfcl_eval.utils._func_doc_language_specific_pre_processing`: a sentence naming the
language at the end of each description and, for Java and JavaScript, every parameter
turned into a string ("This is Java HashMap type parameter in string representation.").
Its checker then reads such a string back with its own converters and compares the
result. `present` mirrors the first step; `convert` calls BFCL's converters, which
import nothing but `re` and the package's type tables (the package's own checker would
pull in every provider SDK, so it is never imported).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

PYTHON, JAVA, JAVASCRIPT = "python", "java", "javascript"
_HINTS = {
    PYTHON: " Note that the provided function is in Python 3 syntax.",
    JAVA: " Note that the provided function is in Java 8 SDK syntax.",
    JAVASCRIPT: " Note that the provided function is in JavaScript syntax.",
}
_NAMES = {JAVA: "Java", JAVASCRIPT: "JavaScript"}
# BFCL's NESTED_CONVERSION_TYPE_LIST: the types whose items are converted too.
NESTED_CONVERSION = ("Array", "ArrayList", "array")


class ConversionError(ValueError):
    """BFCL's converter could not read a Java or JavaScript value."""


def language(category: str) -> str:
    if category.endswith("_javascript"):
        return JAVASCRIPT
    if category.endswith("_java"):
        return JAVA
    return PYTHON


def _string_parameter(value: dict[str, Any], lang: str) -> None:
    kind, name = value.get("type", "any"), _NAMES[lang]
    value.setdefault("description", "")
    if kind == "any":
        value["description"] += (
            f" This parameter can be of any type of {name} object in string representation."
        )
    else:
        value["description"] += f" This is {name} {kind} type parameter in string representation."
    if kind in (("ArrayList", "Array") if lang == JAVA else ("array",)):
        item = (value.get("items") or {}).get("type")
        value["description"] += (
            f" The list elements are of type {item}; they are not in string representation."
        )
        value.pop("items", None)
    if lang == JAVASCRIPT and kind == "dict" and "properties" in value:
        value["description"] += (
            " The dictionary entries have the following schema; they are not in string "
            f"representation. {json.dumps(value['properties'])}"
        )
        del value["properties"]
    value["type"] = "string"


def present(function: Mapping[str, Any], category: str) -> dict[str, Any]:
    """A function as BFCL shows it to a model: hint added, Java/JS parameters as strings."""
    out = copy.deepcopy(dict(function))
    lang = language(category)
    out["description"] = out.get("description", "") + _HINTS[lang]
    if lang != PYTHON:
        properties = (out.get("parameters") or {}).get("properties") or {}
        for value in properties.values():
            _string_parameter(value, lang)
    return out


def _converters() -> dict[str, tuple[Callable[..., Any], Mapping[str, type]]]:
    # Imported on use: only Java and JavaScript questions need them.
    from bfcl_eval.constants.type_mappings import JAVA_TYPE_CONVERSION, JS_TYPE_CONVERSION
    from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import (
        java_type_converter,
    )
    from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import (
        js_type_converter,
    )

    return {
        JAVA: (java_type_converter, JAVA_TYPE_CONVERSION),
        JAVASCRIPT: (js_type_converter, JS_TYPE_CONVERSION),
    }


def expected_types(lang: str, schema: Mapping[str, Any]) -> tuple[type, type | None] | None:
    """The Python types a converted Java/JS value must have (outer, items), or None when
    BFCL does not convert this type."""
    _, table = _converters()[lang]
    kind = schema.get("type", "any")
    if kind not in table:
        return None
    nested = None
    if kind in NESTED_CONVERSION:
        nested = table.get((schema.get("items") or {}).get("type", "any"))
    return table[kind], nested


def convert(lang: str, value: Any, schema: Mapping[str, Any]) -> Any:
    """A model's string for a Java/JS parameter, read as BFCL's checker reads it."""
    if not isinstance(value, str):
        raise ConversionError(f"expected a string representation, got {type(value).__name__}")
    converter, _ = _converters()[lang]
    kind = schema.get("type", "any")
    try:
        if kind in NESTED_CONVERSION:
            return converter(value, kind, (schema.get("items") or {}).get("type", "any"))
        return converter(value, kind)
    except Exception as exc:  # BFCL's parsers raise anything on malformed input
        raise ConversionError(f"{value!r} is not a {kind}: {exc}") from exc
