"""The JSON document of a context, version 1: one pydantic `TypeAdapter` (`DOCUMENT`)
that validates a file straight into the attrs values, and whose JSON Schema
(`document_schema()`) is committed as `parlay/schemas/context-v1.schema.json` and checked
by a test. `parlay.context_json` writes and reads the document.

The attrs values are described to pydantic from their own fields (`AttrsFields`), so a
field a value gains is in the document, and in its schema, whose committed copy the test
then flags. Only what a file holds beyond the values has a model here: a model output
(a thunk is not a value) and a component of the user's own.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, JsonValue, TypeAdapter
from pydantic_core import CoreSchema, core_schema

from parlay.components import Instruction
from parlay.diagnostics import Diagnostics
from parlay.events import FinishReason, Usage
from parlay.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage

FORMAT = "parlay.context"
VERSION = 1
VALUE_TYPE = "value_type"


@attrs.frozen
class AttrsFields:
    """pydantic validation and schema for an attrs class, made from its fields: `Any`
    is a JSON value in a file. `kind` names the item (after the fields when `kind_last`,
    as version 1 wrote a loose tool call); `required`: every field, defaults or not;
    `extra`: document-only fields, read and dropped."""

    kind: str | None = None
    kind_last: bool = False
    required: bool = False
    extra: tuple[tuple[str, Any, Any], ...] = ()

    def __get_pydantic_core_schema__(self, cls: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        attrs.resolve_types(cls)
        names = [f.name for f in attrs.fields(cls)]
        fields = {
            f.name: self._field(handler, in_file(f.type), f.default, self.required)
            for f in attrs.fields(cls)
        }
        fields |= {name: self._field(handler, kind, default) for name, kind, default in self.extra}
        if self.kind is not None:
            tag = self._field(handler, Literal[self.kind], self.kind)
            fields = fields | {"kind": tag} if self.kind_last else {"kind": tag} | fields
        name = f"{cls.__name__}{'Item' if self.kind_last else ''}"
        titled: Any = {"pydantic_js_updates": {"title": name}}
        shape = core_schema.typed_dict_schema(
            fields, extra_behavior="forbid", ref=name, metadata=titled
        )
        return core_schema.no_info_after_validator_function(
            lambda found: cls(**{n: found[n] for n in names if n in found}), shape
        )

    @staticmethod
    def _field(
        handler: Any, annotation: Any, default: Any, required: bool = False
    ) -> core_schema.TypedDictField:
        schema = handler.generate_schema(annotation)
        factory = getattr(default, "factory", None)  # an attrs.Factory
        if callable(factory):
            default = factory()
        if required or default is attrs.NOTHING:
            return core_schema.typed_dict_field(schema, required=True)
        return core_schema.typed_dict_field(
            core_schema.with_default_schema(schema, default=default), required=False
        )


def in_file(annotation: Any) -> Any:
    """`annotation` as a file holds it: attrs classes described by their fields, `Any`
    as a JSON value."""
    if annotation is Any:
        return JsonValue
    if attrs.has(annotation):
        return Annotated[annotation, _AS_FILED.get(annotation, AttrsFields())]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return Union[tuple(in_file(a) for a in args)]  # noqa: UP007
    if origin in (tuple, dict):
        return origin[tuple(in_file(a) for a in args)]
    return annotation


# A call's id is what ties it to its result: a file must say it, and its arguments.
_CALL = AttrsFields(required=True)
_AS_FILED: dict[Any, AttrsFields] = {ToolCall: _CALL}
_Strict = ConfigDict(extra="forbid", frozen=True)
_NOT_KEPT = Annotated[str | None, Field(description="The Python type of a value not kept.")]

System = Annotated[SystemMessage, AttrsFields("system")]
User = Annotated[UserMessage, AttrsFields("user")]
Assistant = Annotated[AssistantMessage, AttrsFields("assistant")]
Call = Annotated[ToolCall, _CALL]
LooseCall = Annotated[ToolCall, AttrsFields("tool_call", kind_last=True, required=True)]
Result = Annotated[ToolResult, AttrsFields("tool_result", extra=((VALUE_TYPE, _NOT_KEPT, None),))]
Message = Annotated[System | User | Assistant | Result, Field(discriminator="kind")]


class ModelOutputJSON(BaseModel):
    """A turn's output: its final round (text, calls) and the rounds before it."""

    model_config = _Strict
    kind: Literal["model_output"] = "model_output"
    text: str = ""
    calls: tuple[Call, ...] = ()
    steps: tuple[Message, ...] = ()
    finish_reason: FinishReason | None = None
    usage: in_file(Usage | None) = None  # type: ignore[valid-type]
    model: str | None = None
    diagnostics: in_file(Diagnostics | None) = None  # type: ignore[valid-type]
    duration_ms: float | None = None
    first_event_ms: float | None = None
    error: str | None = Field(default=None, description="What the turn failed with, if it failed.")


class ComponentJSON(BaseModel):
    """A component of the user's own, as the messages it rendered to."""

    model_config = _Strict
    kind: Literal["component"] = "component"
    type: str
    messages: tuple[Message, ...]


Item = Annotated[
    System
    | User
    | Assistant
    | LooseCall
    | Result
    | Annotated[Instruction, AttrsFields("instruction")]
    | ModelOutputJSON
    | ComponentJSON,
    Field(discriminator="kind"),
]


class ContextDocument(BaseModel):
    """A context, oldest item first. `meta` is free for the caller (`Session.save` keeps
    the backend's name and the tool names there)."""

    model_config = _Strict
    format: Literal["parlay.context"] = "parlay.context"
    version: Literal[1] = 1
    items: tuple[Item, ...] = ()
    meta: dict[str, JsonValue] = {}


DOCUMENT = TypeAdapter(ContextDocument)
DIAGNOSTICS: TypeAdapter[Diagnostics] = TypeAdapter(in_file(Diagnostics))


def document_schema() -> dict[str, Any]:
    """The JSON Schema of the document `Context.to_json` writes."""
    return DOCUMENT.json_schema()


if __name__ == "__main__":  # python -m parlay.context_schema > src/parlay/schemas/...
    import json

    print(json.dumps(document_schema(), indent=2, sort_keys=True))
