"""A small checker that follows BFCL's AST rules for Python categories.

It mirrors `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (which cannot be imported
without every provider SDK): the function name must match; required parameters must be
present; no parameter outside the description and the ground truth; every value must be
among the acceptable ones, with BFCL's leniencies (an int where a float is expected,
strings compared without case, spaces and `,./-_*^`, `""` in the acceptable values
marking an optional parameter that may be left out); parallel calls match in any order,
each expected call taking the first unmatched call that fits (BFCL's greedy rule).
Java and JavaScript values arrive as strings and are read with BFCL's own converters
(`bench.bfcl.languages`). Categories without a right call (live_irrelevance) are right
exactly when no call was made; live_relevance is right with at least one call, any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from bench.bfcl.data import ABSTAIN_CATEGORIES, RELEVANCE_CATEGORIES
from bench.bfcl.languages import PYTHON, ConversionError, convert, expected_types, language

# BFCL's PYTHON_TYPE_MAPPING: the Python type each dialect type must arrive as.
PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool,
                                  "array": list, "tuple": list, "dict": dict, "any": str}  # fmt: skip
_NESTED = ("array", "tuple")
_PUNCTUATION = re.compile(r"[ \,\.\/\-\_\*\^]")

Call = tuple[str, Mapping[str, Any]]


@frozen
class Verdict:
    valid: bool
    error: str = ""
    error_type: str = ""


OK = Verdict(True)


def _fail(error_type: str, error: str) -> Verdict:
    return Verdict(False, error, error_type)


def standardize(text: str) -> str:
    """BFCL's string normal form: no spaces or `,./-_*^`, lower case, `'` as `"`."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


def _answer_type(acceptable: Sequence[Any]) -> type | None:
    return next((type(answer) for answer in acceptable if answer != ""), None)


def _type_check(
    param: str, value: Any, acceptable: Sequence[Any], expected: type, nested: type | None
) -> tuple[Verdict, bool]:
    """(verdict, is_variable). `is_variable`: the ground truth holds a value of another
    type than the description's (BFCL's way of writing "a variable name here")."""
    answer_type = _answer_type(acceptable)
    is_variable = answer_type is not None and answer_type is not expected
    # `type(x) is` on purpose: BFCL rejects True for an integer and 1 for a boolean.
    items: Any = value  # kept apart: the `type(...) is` test narrows `value` to object
    if type(value) is expected:
        if nested is None:
            return OK, is_variable
        for answer in acceptable:
            # As in BFCL, an acceptable value that is not a list (the optional marker "")
            # passes the nested type check.
            if not isinstance(answer, list) or all(
                _type_check(param, item, answer, nested, None)[0].valid for item in items
            ):
                return OK, is_variable
        return (
            _fail(
                "type_error:nested",
                f"{param!r}: expected {expected.__name__} of {nested.__name__}, got {value!r}",
            ),
            False,
        )
    if answer_type is not None and type(value) is answer_type:
        return OK, True
    return (
        _fail(
            "type_error:simple",
            f"{param!r}: expected {expected.__name__}, got {type(value).__name__} {value!r}",
        ),
        False,
    )


def _norm(value: Any) -> Any:
    return standardize(value) if isinstance(value, str) else value


def _dict_check(param: str, value: Mapping[str, Any], acceptable: Sequence[Any]) -> Verdict:
    verdict = _fail("value_error:dict", f"{param!r}: no acceptable dict for {value!r}")
    for answer in acceptable:
        if answer == "":
            continue
        verdict = OK
        for key, item in value.items():
            if key not in answer:
                verdict = _fail("value_error:dict_key", f"{param!r}: unexpected key {key!r}")
                break
            if _norm(item) not in [_norm(a) for a in answer[key]]:
                verdict = _fail(
                    "value_error:dict_value", f"{param!r}[{key!r}]: {item!r} not in {answer[key]}"
                )
                break
        if verdict.valid:
            for key, options in answer.items():
                if key not in value and "" not in options:
                    verdict = _fail("value_error:dict_key", f"{param!r}: missing key {key!r}")
                    break
        if verdict.valid:
            return OK
    return verdict


def _list_of_dicts_check(param: str, value: list[Any], acceptable: Sequence[Any]) -> Verdict:
    verdict = _fail("value_error:list_dict", f"{param!r}: no acceptable list for {value!r}")
    for answer in acceptable:
        if not isinstance(answer, list) or len(answer) != len(value):
            verdict = _fail("value_error:list_dict_count", f"{param!r}: wrong number of dicts")
            continue
        if all(
            isinstance(item, Mapping) and _dict_check(param, item, [expected]).valid
            for item, expected in zip(value, answer, strict=True)
        ):
            return OK
        verdict = _fail("value_error:list_dict", f"{param!r}: {value!r} not in {acceptable}")
    return verdict


def _value_check(
    param: str, value: Any, acceptable: Sequence[Any], expected: type, nested: type | None
) -> Verdict:
    if expected is dict:
        return _dict_check(param, value, acceptable)
    if expected is list and nested is dict:
        return _list_of_dicts_check(param, value, acceptable)
    if expected is str:
        strings = [standardize(a) for a in acceptable if isinstance(a, str)]
        if standardize(value) in strings:
            return OK
        return _fail("value_error:string", f"{param!r}: {value!r} not in {list(acceptable)}")
    if expected is list:
        lists = [[_norm(a) for a in answer] for answer in acceptable if isinstance(answer, list)]
        if [_norm(v) for v in value] in lists:
            return OK
        return _fail("value_error:list", f"{param!r}: {value!r} not in {list(acceptable)}")
    if value in acceptable:
        return OK
    return _fail("value_error:others", f"{param!r}: {value!r} not in {list(acceptable)}")


def _types(
    param: str, raw: Any, schema: Mapping[str, Any], lang: str
) -> tuple[Any, type, type | None] | Verdict:
    """The value as BFCL compares it, with the types it must have (outer, items)."""
    if lang != PYTHON and (types := expected_types(lang, schema)) is not None:
        try:
            return convert(lang, raw, schema), *types
        except ConversionError as exc:
            return _fail(f"type_error:{lang}", f"{param!r}: {exc}")
    type_name = schema.get("type", "any")
    expected = PYTHON_TYPES.get(type_name, str)
    nested = None
    if type_name in _NESTED:
        nested = PYTHON_TYPES.get((schema.get("items") or {}).get("type", "any"))
    value = raw
    if type_name == "tuple" and isinstance(value, tuple):
        value = list(value)
    # Python's own int -> float promotion, which BFCL accepts (for Python only).
    if type_name == "float" and type(value) is int and lang == PYTHON:
        value = float(value)
    return value, expected, nested


def _param_check(
    param: str, raw: Any, schema: Mapping[str, Any], acceptable: Sequence[Any], lang: str
) -> Verdict:
    typed = _types(param, raw, schema, lang)
    if isinstance(typed, Verdict):
        return typed
    value, expected, nested = typed
    verdict, is_variable = _type_check(param, value, acceptable, expected, nested)
    if not verdict.valid:
        return verdict
    if is_variable:
        if value not in acceptable:
            return _fail("value_error:others", f"{param!r}: {value!r} not in {acceptable}")
        return OK
    return _value_check(param, value, acceptable, expected, nested)


def check_call(
    function: Mapping[str, Any],
    call: Call,
    answer: Mapping[str, Any],
    lang: str = PYTHON,
) -> Verdict:
    """One call against one function description and one ground-truth entry."""
    name, arguments = call
    expected_name = function["name"]
    if name != expected_name:
        return _fail("wrong_func_name", f"called {name!r}, expected {expected_name!r}")
    acceptable_by_param: Mapping[str, Sequence[Any]] = answer[expected_name]
    schema = function.get("parameters") or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for param in schema.get("required") or ():
        if param not in arguments:
            return _fail("missing_required", f"missing required parameter {param!r}")
    for param, raw in arguments.items():
        if param not in properties or param not in acceptable_by_param:
            return _fail("unexpected_param", f"unexpected parameter {param!r}")
        verdict = _param_check(param, raw, properties[param], acceptable_by_param[param], lang)
        if not verdict.valid:
            return verdict
    for param, acceptable in acceptable_by_param.items():
        if param not in arguments and "" not in acceptable:
            return _fail("missing_optional", f"parameter {param!r} is needed by the answer")
    return OK


def _describe(functions: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((f for f in functions if f["name"] == name), None)


def check(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[Call],
    ground_truth: Sequence[Mapping[str, Any]],
) -> Verdict:
    """Whether `calls` is a right answer to a question of `category`."""
    if category in RELEVANCE_CATEGORIES:
        if calls:
            return OK
        return _fail("relevance:no_call", "no call made")
    if category in ABSTAIN_CATEGORIES or not ground_truth:
        if calls:
            return _fail("irrelevance:called", f"called {[name for name, _ in calls]}")
        return OK
    lang = language(category)
    if len(calls) != len(ground_truth):
        return _fail("wrong_count", f"{len(calls)} calls, expected {len(ground_truth)}")
    if "parallel" not in category:
        answer = ground_truth[0]
        function = _describe(functions, next(iter(answer)))
        if function is None:
            raise ValueError(f"the ground truth names {next(iter(answer))!r}, not among functions")
        return check_call(function, calls[0], answer, lang)
    # Parallel: each expected call takes the first unmatched model call that fits.
    matched: set[int] = set()
    for answer in ground_truth:
        function = _describe(functions, next(iter(answer)))
        if function is None:
            raise ValueError(f"the ground truth names {next(iter(answer))!r}, not among functions")
        last = _fail("cannot_find_match", f"no call matches {answer}")
        for index, call in enumerate(calls):
            if index in matched:
                continue
            last = check_call(function, call, answer, lang)
            if last.valid:
                matched.add(index)
                break
        if not last.valid:
            return _fail("cannot_find_match", f"no call matches {answer}: {last.error}")
    return OK
