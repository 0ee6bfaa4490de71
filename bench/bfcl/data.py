"""BFCL questions and ground truth, read straight from the `bfcl-eval` package's data files.

The package is found with `importlib.util.find_spec` and never imported: its own modules
pull in every provider SDK. Install it without its dependencies:
`pip install --no-deps 'bfcl-eval==2026.3.23'`.

BFCL describes parameters in its own dialect of JSON schema ("dict", "float", "tuple",
"any"); `to_json_schema` maps it the way BFCL's own OpenAI-style handlers do, so both
llama.cpp's native tools and parlay's contract see ordinary JSON schema.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

from attrs import frozen

from bench.bfcl.languages import present
from parlay.context import AssistantMessage, Message, SystemMessage, UserMessage
from parlay.request import ToolSpec

INSTALL_HINT = "pip install --no-deps 'bfcl-eval==2026.3.23'"
DATA_VERSION = "BFCL_v4"
# Kept aside for an independent check of the engine: never loaded, run or read here.
HELD_OUT = frozenset({"live_simple", "parallel", "irrelevance", "live_multiple"})
# The categories the development benchmark runs, by the rule that judges them.
SINGLE_CALL_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple")
PARALLEL_CATEGORIES = ("parallel_multiple", "live_parallel", "live_parallel_multiple")
CALL_CATEGORIES = SINGLE_CALL_CATEGORIES + PARALLEL_CATEGORIES
# Right exactly when no call is made.
ABSTAIN_CATEGORIES = ("live_irrelevance",)
# Right with at least one call, any (BFCL's relevance rule: no ground truth).
RELEVANCE_CATEGORIES = ("live_relevance",)
DEV_CATEGORIES = CALL_CATEGORIES + ABSTAIN_CATEGORIES + RELEVANCE_CATEGORIES
_WITHOUT_ANSWERS = ABSTAIN_CATEGORIES + RELEVANCE_CATEGORIES


class HeldOutCategoryError(ValueError):
    """A category kept aside for the independent check was asked for."""


def refuse_held_out(category: str) -> None:
    """Raise before anything is read when `category` is one of the four kept aside."""
    if category in HELD_OUT:
        raise HeldOutCategoryError(
            f"{category!r} is kept aside for an independent check "
            f"({', '.join(sorted(HELD_OUT))}): the development benchmark never reads it"
        )


# BFCL's GORILLA_TO_OPENAPI type mapping (bfcl_eval/constants/type_mappings.py).
_TYPES = {"integer": "integer", "number": "number", "float": "number", "string": "string",
          "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
          "dict": "object", "object": "object", "tuple": "array", "any": "string"}  # fmt: skip
# Keys of BFCL's dialect that are not JSON schema.
_DROPPED_KEYS = frozenset({"optional"})


@frozen
class Question:
    """One BFCL entry: the conversation, the functions offered, and the acceptable calls.

    `functions` keeps BFCL's own descriptions (the checker reads their dialect types);
    `ground_truth` is BFCL's list of `{name: {param: [acceptable values]}}`, empty for
    categories where the right answer is no call.
    """

    id: str
    category: str
    messages: tuple[Message, ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, Any], ...]

    @property
    def offered(self) -> tuple[dict[str, Any], ...]:
        """The functions as BFCL shows them to a model (`languages.present`)."""
        return tuple(present(function, self.category) for function in self.functions)

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools of the development benchmark: BFCL's presentation, as JSON schema."""
        return tuple(to_tool_spec(function) for function in self.offered)


def data_dir() -> Path:
    """The `bfcl_eval/data` folder of the installed package (without importing it)."""
    spec = importlib.util.find_spec("bfcl_eval")
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "data"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the BFCL data is not installed: run `{INSTALL_HINT}`")


def _read_lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _messages(turns: list[list[dict[str, Any]]], question_id: str) -> tuple[Message, ...]:
    # The categories used here are single-turn: one list of messages.
    if len(turns) != 1:
        raise ValueError(f"{question_id} has {len(turns)} turns; only single-turn is supported")
    roles = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    if unknown := [m["role"] for m in turns[0] if m["role"] not in roles]:
        raise ValueError(f"{question_id}: unknown role {unknown[0]!r}")
    return tuple(roles[m["role"]](m["content"]) for m in turns[0])


@cache
def load_category(category: str) -> tuple[Question, ...]:
    """Every question of a BFCL category, in file order (never one kept aside)."""
    refuse_held_out(category)
    folder = data_dir()
    path = folder / f"{DATA_VERSION}_{category}.json"
    if not path.is_file():
        names = (
            p.name.removeprefix(f"{DATA_VERSION}_").removesuffix(".json")
            for p in folder.glob(f"{DATA_VERSION}_*.json")
        )
        known = sorted(name for name in names if name not in HELD_OUT)
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(known)}")
    answers: dict[str, list[dict[str, Any]]] = {}
    if category not in _WITHOUT_ANSWERS:
        answer_path = folder / "possible_answer" / path.name
        answers = {row["id"]: row["ground_truth"] for row in _read_lines(answer_path)}
    questions = []
    for row in _read_lines(path):
        truth = answers.get(row["id"], [])
        if category not in _WITHOUT_ANSWERS and not truth:
            raise ValueError(f"{row['id']} has no ground truth in {answer_path}")
        questions.append(
            Question(
                id=row["id"],
                category=category,
                messages=_messages(row["question"], row["id"]),
                functions=tuple(row["function"]),
                ground_truth=tuple(truth),
            )
        )
    return tuple(questions)


def to_json_schema(schema: Any) -> Any:
    """BFCL's parameter dialect to JSON schema (recursively: properties, items)."""
    if isinstance(schema, list):
        return [to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "type" and isinstance(value, str):
            out[key] = _TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    return out


def to_tool_spec(function: dict[str, Any]) -> ToolSpec:
    parameters = to_json_schema(function.get("parameters") or {"type": "object"})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return ToolSpec(function["name"], function.get("description", ""), parameters)
