"""`--schema`: the shape the answer must have, as llm's `--schema` takes it.

Inline JSON, a JSON file, or a pydantic model as `module:Class` (the module imported from
the current folder or the path). The model is asked for JSON matching it (a
`ResponseFormat`), and the answer is checked against it before it is printed.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
from attrs import frozen
from pydantic import BaseModel, RootModel, ValidationError

from parlay.errors import ConfigurationError, ParlayError


class SchemaMismatchError(ParlayError):
    """The model's answer is not JSON matching `--schema`."""


@frozen
class AnswerSchema:
    format: type[BaseModel]  # what the session sends as the response format
    pydantic: bool  # True: checked by the model class, else by the JSON schema

    def check(self, text: str) -> str:
        """`text` as one line of JSON if it matches; else a `SchemaMismatchError`."""
        try:
            if self.pydantic:
                value: Any = self.format.model_validate_json(text).model_dump(mode="json")
            else:
                value = json.loads(text)
                jsonschema.validate(value, self.format.model_json_schema())
        except (ValueError, ValidationError, jsonschema.ValidationError) as exc:
            reason = exc.message if isinstance(exc, jsonschema.ValidationError) else exc
            raise SchemaMismatchError(
                f"the answer does not match --schema: {reason}; the answer was {text[:200]!r}"
            ) from None
        return json.dumps(value, ensure_ascii=False)


def load_schema(spec: str) -> AnswerSchema:
    text = spec.strip()
    if text.startswith("{"):
        return _from_json(text, "inline --schema")
    path = Path(text).expanduser()
    if path.is_file():
        return _from_json(path.read_text(encoding="utf-8"), str(path))
    if ":" in text:
        return AnswerSchema(_model_class(text), pydantic=True)
    raise ConfigurationError(
        f"--schema {spec!r} is not a JSON schema, a file, or a pydantic model as module:Class"
    )


def _from_json(text: str, where: str) -> AnswerSchema:
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise ConfigurationError(f"{where} is not a JSON schema object")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"{where} is not a valid JSON schema: {exc.message}") from None
    return AnswerSchema(_schema_model(schema), pydantic=False)


def _schema_model(schema: dict[str, Any]) -> type[BaseModel]:
    """A model class whose JSON schema is exactly `schema` (what `format=` sends)."""

    class Response(RootModel[Any]):
        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return schema

    return Response


def _model_class(spec: str) -> type[BaseModel]:
    module_name, _, class_name = spec.partition(":")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # as `python -m`: modules of the current folder
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"--schema {spec}: {exc}") from None
    if not (isinstance(found, type) and issubclass(found, BaseModel)):
        raise ConfigurationError(f"--schema {spec} is not a pydantic model class")
    return found
