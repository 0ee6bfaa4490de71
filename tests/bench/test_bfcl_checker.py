"""The BFCL checker follows BFCL's AST rules (bfcl_eval/eval_checker/ast_eval/ast_checker.py).

Hand-written cases for each rule, plus a pass over the real ground truth of the
categories the benchmark uses when the `bfcl-eval` data is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

# The benchmark lives in the repository's `bench` package, outside `src`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.bfcl.checker import check, check_call, standardize
from bench.bfcl.data import data_dir, load_category, to_json_schema

AREA = {
    "name": "calculate_triangle_area",
    "description": "Area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer"},
            "height": {"type": "float"},
            "unit": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "dict", "properties": {"exact": {"type": "boolean"}}},
            "rounded": {"type": "boolean"},
        },
        "required": ["base", "height"],
    },
}
AREA_ANSWER = {
    "calculate_triangle_area": {
        "base": [10],
        "height": [5.0],
        "unit": ["units", ""],
        "tags": [["New York", "Paris"], ""],
        "options": [{"exact": [True]}, ""],
        "rounded": [False, ""],
    }
}
CIRCLE: dict[str, Any] = {
    "name": "circle.area",
    "parameters": {
        "type": "dict",
        "properties": {"radius": {"type": "integer"}},
        "required": ["radius"],
    },
}
CIRCLE_ANSWER = {"circle.area": {"radius": [3]}}


def simple(arguments: dict[str, Any], name: str = "calculate_triangle_area") -> Any:
    return check("simple_python", [AREA], [(name, arguments)], [AREA_ANSWER])


def test_the_right_call_passes() -> None:
    assert simple({"base": 10, "height": 5.0}).valid


def test_a_wrong_function_name_fails() -> None:
    verdict = simple({"base": 10, "height": 5.0}, name="triangle_area")
    assert (verdict.valid, verdict.error_type) == (False, "wrong_func_name")


def test_a_missing_required_parameter_fails() -> None:
    verdict = simple({"base": 10})
    assert (verdict.valid, verdict.error_type) == (False, "missing_required")


def test_an_unknown_parameter_fails() -> None:
    verdict = simple({"base": 10, "height": 5.0, "color": "red"})
    assert (verdict.valid, verdict.error_type) == (False, "unexpected_param")


def test_a_value_outside_the_acceptable_ones_fails() -> None:
    verdict = simple({"base": 11, "height": 5.0})
    assert (verdict.valid, verdict.error_type) == (False, "value_error:others")


def test_an_int_is_accepted_for_a_float() -> None:
    assert simple({"base": 10, "height": 5}).valid


def test_a_float_is_not_accepted_for_an_int() -> None:
    verdict = simple({"base": 10.0, "height": 5.0})
    assert (verdict.valid, verdict.error_type) == (False, "type_error:simple")


def test_a_bool_is_not_an_int_and_a_string_is_not_a_number() -> None:
    assert not simple({"base": True, "height": 5.0}).valid
    assert not simple({"base": "10", "height": 5.0}).valid


def test_strings_compare_without_case_spaces_or_punctuation() -> None:
    assert simple({"base": 10, "height": 5.0, "unit": "UNITS"}).valid
    assert simple({"base": 10, "height": 5.0, "unit": "u-n_i.ts"}).valid
    assert not simple({"base": 10, "height": 5.0, "unit": "meters"}).valid
    assert standardize("April 1, 2024") == standardize("april 1 2024")


def test_an_optional_parameter_may_be_given_or_left_out() -> None:
    assert simple({"base": 10, "height": 5.0, "unit": "units", "rounded": False}).valid
    assert not simple({"base": 10, "height": 5.0, "rounded": True}).valid


def test_a_parameter_the_answer_needs_cannot_be_left_out() -> None:
    # Not required by the schema, but the ground truth has no "" among its values.
    answer = {"circle.area": {"radius": [3]}}
    function = {**CIRCLE, "parameters": {**CIRCLE["parameters"], "required": []}}
    verdict = check_call(function, ("circle.area", {}), answer)
    assert (verdict.valid, verdict.error_type) == (False, "missing_optional")


def test_lists_compare_in_order_with_standardized_strings() -> None:
    assert simple({"base": 10, "height": 5.0, "tags": ["new york", "PARIS"]}).valid
    assert not simple({"base": 10, "height": 5.0, "tags": ["Paris", "New York"]}).valid
    assert not simple({"base": 10, "height": 5.0, "tags": [1, 2]}).valid


def test_dicts_compare_key_by_key() -> None:
    assert simple({"base": 10, "height": 5.0, "options": {"exact": True}}).valid
    assert not simple({"base": 10, "height": 5.0, "options": {"exact": False}}).valid
    assert not simple({"base": 10, "height": 5.0, "options": {"exact": True, "x": 1}}).valid
    assert not simple({"base": 10, "height": 5.0, "options": {}}).valid


def test_a_simple_question_takes_exactly_one_call() -> None:
    right = ("calculate_triangle_area", {"base": 10, "height": 5.0})
    assert not check("simple_python", [AREA], [], [AREA_ANSWER]).valid
    verdict = check("simple_python", [AREA], [right, right], [AREA_ANSWER])
    assert (verdict.valid, verdict.error_type) == (False, "wrong_count")


def test_multiple_picks_the_described_function_among_several() -> None:
    right = ("circle.area", {"radius": 3})
    assert check("multiple", [AREA, CIRCLE], [right], [CIRCLE_ANSWER]).valid
    wrong = ("calculate_triangle_area", {"base": 10, "height": 5.0})
    verdict = check("multiple", [AREA, CIRCLE], [wrong], [CIRCLE_ANSWER])
    assert (verdict.valid, verdict.error_type) == (False, "wrong_func_name")


def test_parallel_calls_match_in_any_order() -> None:
    truth = [CIRCLE_ANSWER, {"circle.area": {"radius": [4]}}]
    four, three = ("circle.area", {"radius": 4}), ("circle.area", {"radius": 3})
    assert check("parallel", [CIRCLE], [four, three], truth).valid
    assert check("parallel", [CIRCLE], [three, four], truth).valid
    assert not check("parallel", [CIRCLE], [three, three], truth).valid
    assert not check("parallel", [CIRCLE], [three], truth).valid


def test_irrelevance_is_right_exactly_without_a_call() -> None:
    assert check("live_irrelevance", [CIRCLE], [], []).valid
    verdict = check("live_irrelevance", [CIRCLE], [("circle.area", {"radius": 1})], [])
    assert (verdict.valid, verdict.error_type) == (False, "irrelevance:called")


def test_bfcl_dialect_maps_to_json_schema() -> None:
    schema = to_json_schema(
        {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "optional": True},
                "pair": {"type": "tuple", "items": {"type": "any"}},
            },
        }
    )
    assert schema == {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "string"}},
        },
    }


def _bfcl_installed() -> bool:
    try:
        data_dir()
    except FileNotFoundError:
        return False
    return True


def _pick(options: dict[str, list[Any]]) -> dict[str, Any]:
    """The first acceptable non-empty value of each parameter (some required parameters
    list "" first in BFCL's data); nested dicts list options per key."""
    picked = {}
    for param, values in options.items():
        given = [value for value in values if value != ""]
        if given:
            first = given[0]
            if isinstance(first, dict):
                first = _pick(first)
            elif isinstance(first, list):
                first = [_pick(item) if isinstance(item, dict) else item for item in first]
            picked[param] = first
    return picked


def _first_acceptable(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name = next(iter(answer))
    return name, _pick(answer[name])


@pytest.mark.skipif(not _bfcl_installed(), reason="bfcl-eval data not installed")
@pytest.mark.parametrize("category", ["simple_python", "multiple"])
def test_every_ground_truth_passes_and_a_wrong_name_fails(category: str) -> None:
    for question in load_category(category):
        calls = [_first_acceptable(answer) for answer in question.ground_truth]
        assert check(category, question.functions, calls, question.ground_truth).valid, question.id
        renamed = [(name + "_x", arguments) for name, arguments in calls]
        assert not check(category, question.functions, renamed, question.ground_truth).valid


WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
WEATHER_TRUTH = [
    {"get_weather": {"city": ["Beijing, China"], "unit": ["", "celsius"]}},
    {"get_weather": {"city": ["Shanghai, China"], "unit": ["", "celsius"]}},
    {"circle.area": {"radius": [3]}},
]
BEIJING = ("get_weather", {"city": "Beijing, China"})
SHANGHAI = ("get_weather", {"city": "shanghai china", "unit": "celsius"})
THREE = ("circle.area", {"radius": 3})


@pytest.mark.parametrize(
    "category", ["parallel_multiple", "live_parallel", "live_parallel_multiple"]
)
def test_parallel_answers_match_in_any_order_in_every_parallel_category(category: str) -> None:
    functions = [WEATHER, CIRCLE]
    for calls in (
        [BEIJING, SHANGHAI, THREE],
        [THREE, SHANGHAI, BEIJING],
        [SHANGHAI, THREE, BEIJING],
    ):
        assert check(category, functions, calls, WEATHER_TRUTH).valid, calls


@pytest.mark.parametrize(
    "category", ["parallel_multiple", "live_parallel", "live_parallel_multiple"]
)
def test_a_parallel_answer_with_a_call_too_many_or_too_few_fails(category: str) -> None:
    functions = [WEATHER, CIRCLE]
    for calls in ([BEIJING, SHANGHAI], [BEIJING, SHANGHAI, THREE, THREE], [BEIJING]):
        verdict = check(category, functions, calls, WEATHER_TRUTH)
        assert (verdict.valid, verdict.error_type) == (False, "wrong_count"), calls


def test_a_parallel_answer_cannot_use_one_call_for_two_expected_ones() -> None:
    # Same count, but Beijing twice: the second expected call finds no unmatched one.
    verdict = check("live_parallel", [WEATHER, CIRCLE], [BEIJING, BEIJING, THREE], WEATHER_TRUTH)
    assert (verdict.valid, verdict.error_type) == (False, "cannot_find_match")


def test_a_single_call_category_takes_one_call_even_if_a_second_is_right_too() -> None:
    truth = [{"circle.area": {"radius": [3]}}]
    verdict = check("multiple", [WEATHER, CIRCLE], [THREE, BEIJING], truth)
    assert (verdict.valid, verdict.error_type) == (False, "wrong_count")


def test_live_relevance_is_right_with_any_call_and_wrong_without() -> None:
    assert check("live_relevance", [WEATHER], [("get_weather", {})], []).valid
    assert check("live_relevance", [WEATHER], [("not_offered", {"x": 1})], []).valid
    verdict = check("live_relevance", [WEATHER], [], [])
    assert (verdict.valid, verdict.error_type) == (False, "relevance:no_call")


JAVA_FUNCTION: dict[str, Any] = {
    "name": "Loop.probability",
    "parameters": {
        "type": "dict",
        "properties": {
            "trueCount": {"type": "integer"},
            "total": {"type": "long"},
            "exact": {"type": "boolean"},
            "names": {"type": "ArrayList", "items": {"type": "String"}},
            "owner": {"type": "any"},
        },
        "required": ["trueCount"],
    },
}
JAVA_TRUTH = [
    {
        "Loop.probability": {
            "trueCount": [150],
            "total": [200, ""],
            "exact": [True, ""],
            "names": [["a", "b"], ""],
            "owner": ["profile", ""],
        }
    }
]


def test_java_values_arrive_as_strings_and_are_read_with_bfcls_converters() -> None:
    call = (
        "Loop.probability",
        {
            "trueCount": "150",
            "total": "200L",
            "exact": "true",
            "names": 'new ArrayList<>(Arrays.asList("a", "b"))',
            "owner": "profile",
        },
    )
    assert check("simple_java", [JAVA_FUNCTION], [call], JAVA_TRUTH).valid
    wrong = ("Loop.probability", {"trueCount": "151"})
    assert not check("simple_java", [JAVA_FUNCTION], [wrong], JAVA_TRUTH).valid


def test_a_java_value_that_is_not_a_string_fails_its_type() -> None:
    verdict = check(
        "simple_java", [JAVA_FUNCTION], [("Loop.probability", {"trueCount": 150})], JAVA_TRUTH
    )
    assert (verdict.valid, verdict.error_type) == (False, "type_error:java")


def test_javascript_strings_and_arrays_are_read_as_bfcl_reads_them() -> None:
    function = {
        "name": "filter",
        "parameters": {
            "type": "dict",
            "properties": {
                "status": {"type": "array", "items": {"type": "String"}},
                "path": {"type": "String"},
            },
            "required": ["status", "path"],
        },
    }
    truth = [{"filter": {"status": [["completed", "failed"]], "path": ["/var/log/db.log"]}}]
    call = ("filter", {"status": "['completed', 'failed']", "path": "/var/log/db.log"})
    assert check("simple_javascript", [function], [call], truth).valid


@pytest.mark.skipif(not _bfcl_installed(), reason="bfcl-eval data not installed")
@pytest.mark.parametrize(
    "category", ["parallel_multiple", "live_parallel", "live_parallel_multiple"]
)
def test_every_parallel_ground_truth_passes_in_reverse_order(category: str) -> None:
    for question in load_category(category):
        described = {f["name"]: f["parameters"]["properties"] for f in question.functions}
        calls = []
        for answer in question.ground_truth:
            name, arguments = _first_acceptable(answer)
            # BFCL's data lists a few parameters its functions do not describe.
            calls.append((name, {k: v for k, v in arguments.items() if k in described[name]}))
        calls.reverse()
        assert check(category, question.functions, calls, question.ground_truth).valid, question.id
        assert not check(category, question.functions, calls[1:], question.ground_truth).valid
