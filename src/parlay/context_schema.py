"""The JSON document of a context, as pydantic models: version 1 (`parlay.context_json`
writes and reads it; the JSON Schema is `document_schema()`, committed as
`parlay/schemas/context-v1.schema.json` and checked by a test).

`Usage`, `Diagnostics` and `RetryRecord` are attrs classes: their models are made from
their fields (`mirror`), so a field they gain is in the document, and in its schema,
whose committed copy the test then flags as changed.
"""

from __future__ import annotations

import functools
import operator
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    create_model,
    model_serializer,
)

from parlay.diagnostics import Diagnostics
from parlay.events import FinishReason, Usage
from parlay.image import Image

FORMAT = "parlay.context"
VERSION = 1

_MIRRORS: dict[type[Any], type[BaseModel]] = {}


def _mirrored(annotation: Any) -> Any:
    """`annotation` with every attrs class in it replaced by its pydantic mirror."""
    if attrs.has(annotation):
        return mirror(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is tuple:
        return tuple[tuple(_mirrored(a) for a in args)]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, (_mirrored(a) for a in args))
    return annotation


def mirror(cls: type[Any]) -> type[BaseModel]:
    """A pydantic model with the fields of the attrs class `cls`: a field the class gains
    is in the document (and its schema, whose committed copy a test then flags)."""
    if cls not in _MIRRORS:
        attrs.resolve_types(cls)
        fields: dict[str, Any] = {}
        for f in attrs.fields(cls):
            factory = getattr(f.default, "factory", None)  # an attrs.Factory
            default = factory() if callable(factory) else f.default
            fields[f.name] = (_mirrored(f.type), default)
        config = ConfigDict(extra="forbid", frozen=True)
        _MIRRORS[cls] = create_model(cls.__name__, __config__=config, **fields)
    return _MIRRORS[cls]


def to_attrs(cls: type[Any], model: BaseModel) -> Any:
    return cls(**{f.name: back(getattr(model, f.name)) for f in attrs.fields(cls)})


def back(value: Any) -> Any:
    if isinstance(value, BaseModel):
        (cls,) = [c for c, m in _MIRRORS.items() if isinstance(value, m)]
        return to_attrs(cls, value)
    if isinstance(value, (tuple, list)):
        return tuple(back(v) for v in value)
    return value


UsageJSON = mirror(Usage)
DiagnosticsJSON = mirror(Diagnostics)
ImageJSON = mirror(Image)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CallJSON(_Strict):
    name: str
    arguments: dict[str, JsonValue]
    id: str


class SystemJSON(_Strict):
    kind: Literal["system"] = "system"
    content: str


class _WithImages(_Strict):
    """A message that may carry images: written only when it has some, so a document
    without images reads as it did before images were kept."""

    @model_serializer(mode="wrap")
    def _images_when_any(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if not out.get("images"):
            out.pop("images", None)
        return out


class UserJSON(_WithImages):
    kind: Literal["user"] = "user"
    content: str
    images: tuple[ImageJSON, ...] = ()  # type: ignore[valid-type]


class AssistantJSON(_Strict):
    kind: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[CallJSON, ...] = ()


class ToolCallJSON(CallJSON):
    kind: Literal["tool_call"] = "tool_call"


class ToolResultJSON(_WithImages):
    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str = ""
    error: str | None = None
    value: JsonValue = None
    value_type: str | None = Field(default=None, description="The Python type of a value not kept.")
    images: tuple[ImageJSON, ...] = ()  # type: ignore[valid-type]


MessageJSON = Annotated[
    SystemJSON | UserJSON | AssistantJSON | ToolResultJSON, Field(discriminator="kind")
]


class InstructionJSON(_Strict):
    kind: Literal["instruction"] = "instruction"
    template: str
    variables: dict[str, JsonValue] = {}
    template_dir: str | None = None


class ModelOutputJSON(_Strict):
    """A turn's output: its final round (text, calls) and the rounds before it."""

    kind: Literal["model_output"] = "model_output"
    text: str = ""
    calls: tuple[CallJSON, ...] = ()
    steps: tuple[MessageJSON, ...] = ()
    finish_reason: FinishReason | None = None
    usage: UsageJSON | None = None  # type: ignore[valid-type]
    model: str | None = None
    diagnostics: DiagnosticsJSON | None = None  # type: ignore[valid-type]
    duration_ms: float | None = None
    first_event_ms: float | None = None
    error: str | None = Field(default=None, description="What the turn failed with, if it failed.")


class ComponentJSON(_Strict):
    """A component of the user's own, as the messages it rendered to."""

    kind: Literal["component"] = "component"
    type: str
    messages: tuple[MessageJSON, ...]


ItemJSON = Annotated[
    SystemJSON
    | UserJSON
    | AssistantJSON
    | ToolCallJSON
    | ToolResultJSON
    | InstructionJSON
    | ModelOutputJSON
    | ComponentJSON,
    Field(discriminator="kind"),
]


class ContextDocument(_Strict):
    """A context, oldest item first. `meta` is free for the caller (`Session.save` keeps
    the backend's name and the tool names there)."""

    format: Literal["parlay.context"] = "parlay.context"
    version: Literal[1] = 1
    items: tuple[ItemJSON, ...] = ()
    meta: dict[str, JsonValue] = {}


DOCUMENT = TypeAdapter(ContextDocument)


def document_schema() -> dict[str, Any]:
    """The JSON Schema of the document `Context.to_json` writes."""
    return DOCUMENT.json_schema()


if __name__ == "__main__":  # python -m parlay.context_schema > src/parlay/schemas/...
    import json

    print(json.dumps(document_schema(), indent=2, sort_keys=True))
