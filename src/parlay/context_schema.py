"""A context as a JSON document, version 1 (`Context.to_json`, `Session.save` and back):
the attrs values read by one pydantic `TypeAdapter` and written by their own fields, so a
new field is in the document and its JSON Schema (`document_schema()`, checked by a test)."""

from __future__ import annotations

import os
import tempfile
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError
from pydantic_core import core_schema, to_jsonable_python
from pydantic_core import to_json as json_bytes

from parlay import messages
from parlay.components import Instruction
from parlay.context_problems import lone_surrogate, unwritable, validation_problems
from parlay.diagnostics import Diagnostics
from parlay.errors import InvalidRequestError, ThunkError
from parlay.events import Event, Finish, FinishReason, TextDelta, ToolCallEnd, Usage
from parlay.messages import Item, Message, ToolCall, ToolResult
from parlay.template_folders import NO_FOLDERS, TemplateFolders
from parlay.thunk import ModelOutputThunk

# Written only when not empty, so a document without them reads as before they were kept.
_WHEN_ANY = ("images", "references")
_NOT_KEPT = Annotated[str | None, Field(description="The Python type of a value not kept.")]
_FAILED = Annotated[str | None, Field(description="What the turn failed with, if it failed.")]


@attrs.frozen
class AttrsFields:
    """An attrs class in a file, by its fields (`Any`: JSON). `kind` names the item (after
    the fields when `kind_last`, as version 1 wrote a loose call); `required`: every field;
    `extra`: read, dropped; `title`: a schema name, for a class of the file's own."""

    kind: str | None = None
    kind_last: bool = False
    required: bool = False
    extra: tuple[tuple[str, Any, Any], ...] = ()
    title: str | None = None

    def __get_pydantic_core_schema__(self, cls: Any, handler: Any) -> Any:
        def field(kind: Any, default: Any, required: bool = False) -> Any:
            schema = handler.generate_schema(kind)
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()
            required = required or default is attrs.NOTHING
            if not required:
                schema = core_schema.with_default_schema(schema, default=default)
            return core_schema.typed_dict_field(schema, required=required)

        own = attrs.fields(attrs.resolve_types(cls, include_extras=True))
        fields = {f.name: field(in_file(f.type), f.default, self.required) for f in own}
        names = list(fields)
        fields |= {name: field(kind, default) for name, kind, default in self.extra}
        tag = {} if self.kind is None else {"kind": field(Literal[self.kind], self.kind)}
        name = self.title or f"{cls.__name__}{'Item' if self.kind_last else ''}"
        about = {"description": cls.__doc__} if self.title else {}
        shape = core_schema.typed_dict_schema(
            self._tagged(fields, tag), extra_behavior="forbid", ref=name,
            metadata={"pydantic_js_updates": {"title": name} | about},
        )  # fmt: skip
        made = lambda found: cls(**{n: found[n] for n in names if n in found})  # noqa: E731
        return core_schema.no_info_after_validator_function(made, shape)

    def _tagged(self, fields: dict[str, Any], tag: dict[str, Any]) -> dict[str, Any]:
        return fields | tag if self.kind_last else tag | fields

    def dump(self, value: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name, inner in attrs.asdict(value, recurse=False).items():
            if isinstance(value, ToolResult) and name == "value":
                fields |= _kept_value(inner)
            elif inner or name not in _WHEN_ANY:
                fields[name] = plain(inner)
        return self._tagged(fields, {} if self.kind is None else {"kind": self.kind})


def plain(value: Any, loose: bool = False) -> Any:
    """`value` as a file holds it (JSON checked later): items by kind, a call when `loose`."""
    if attrs.has(type(value)):
        found = (f for cls, f in FILED.items() if isinstance(value, cls))
        filed = next(found, None) if loose or not isinstance(value, ToolCall) else None
        return (filed or AttrsFields()).dump(value)
    return [plain(v) for v in value] if isinstance(value, tuple) else value


def _kept_value(value: Any) -> dict[str, Any]:  # its JSON form, or null and its type's name
    try:
        return {"value": to_jsonable_python(value), "value_type": None}
    except Exception:  # a DataFrame, a socket: its output text is what the model saw
        if lone_surrogate(value, "") is not None:  # text, kept so that writing names it
            return {"value": value, "value_type": None}
        return {"value": None, "value_type": f"{type(value).__module__}.{type(value).__name__}"}


def in_file(annotation: Any) -> Any:  # as a file holds it: attrs values by their fields
    if annotation is Any:
        return JsonValue
    if annotation == Message:  # told apart by kind
        return _MESSAGE
    if attrs.has(annotation):
        return Annotated[annotation, AttrsFields(required=annotation is ToolCall)]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return Union[tuple(in_file(a) for a in args)]  # noqa: UP007
    return origin[tuple(in_file(a) for a in args)] if origin in (tuple, dict) else annotation


@attrs.frozen
class ModelOutputJSON:
    """A turn's output: its final round (text, calls) and the rounds before it."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    steps: tuple[Message, ...] = ()
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    model: str | None = None
    diagnostics: Diagnostics | None = None
    duration_ms: float | None = None
    first_event_ms: float | None = None
    error: _FAILED = None


@attrs.frozen
class RenderedComponent:
    """A component of the user's own, as the messages it rendered to."""

    type: str
    messages: tuple[Message, ...]

    def as_messages(self) -> tuple[Message, ...]:
        return self.messages


# The items a file names by `kind`. A call's id is what ties it to its result: a file
# must say it, and its arguments (loose, in a message or in an output: `in_file`).
FILED: dict[type[Any], AttrsFields] = {
    messages.SystemMessage: AttrsFields("system"),
    messages.UserMessage: AttrsFields("user"),
    messages.AssistantMessage: AttrsFields("assistant"),
    ToolCall: AttrsFields("tool_call", kind_last=True, required=True),
    ToolResult: AttrsFields("tool_result", extra=(("value_type", _NOT_KEPT, None),)),
    Instruction: AttrsFields("instruction"),
    ModelOutputJSON: AttrsFields("model_output", title="ModelOutputJSON"),
    RenderedComponent: AttrsFields("component", title="ComponentJSON"),
}
_ITEMS = {cls: Annotated[cls, filed] for cls, filed in FILED.items()}
_MESSAGES: Any = Union[tuple(_ITEMS[m] for m in get_args(Message))]  # noqa: UP007
_MESSAGE: Any = Annotated[_MESSAGES, Field(discriminator="kind")]
_ITEM: Any = Annotated[Union[tuple(_ITEMS.values())], Field(discriminator="kind")]  # noqa: UP007


class ContextDocument(BaseModel):
    """A context, oldest item first. `meta` is free for the caller (`Session.save` keeps
    the backend's name and the tool names there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["parlay.context"] = "parlay.context"
    version: Literal[1] = 1
    items: tuple[_ITEM, ...] = ()
    meta: dict[str, JsonValue] = {}


DOCUMENT = TypeAdapter(ContextDocument)
DIAGNOSTICS: TypeAdapter[Diagnostics] = TypeAdapter(in_file(Diagnostics))
document_schema = DOCUMENT.json_schema  # the JSON Schema of the document `to_json` writes


def _filed(item: Any) -> Any:  # a thunk as its output, a user's component as its messages
    if isinstance(item, ModelOutputThunk):
        out: dict[str, Any] = {n: getattr(item, n) for n in ("duration_ms", "first_event_ms")}
        try:
            out |= {"text": item.value, "calls": tuple(item.tools), "steps": tuple(item.steps)}
            out |= {n: getattr(item, n) for n in ("finish_reason", "usage", "model", "diagnostics")}
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        return ModelOutputJSON(**out)
    if isinstance(item, tuple(FILED)):
        return item
    name = f"{type(item).__module__}.{type(item).__qualname__}"
    return RenderedComponent(name, tuple(item.as_messages()))


def to_json(
    items: Iterable[Item], *, indent: int | None = None, meta: dict[str, Any] | None = None
) -> str:
    """`items` (a context) as the document, with `meta` beside them."""
    records = [plain(_filed(item), loose=True) for item in items]
    document = {"format": "parlay.context", "version": 1, "items": records, "meta": meta or {}}
    try:
        return json_bytes(document, indent=indent, inf_nan_mode="null").decode()
    except ValueError as exc:  # pydantic's serialization error: which item, and where
        raise InvalidRequestError(unwritable(records, meta, exc)) from exc


def from_json(
    text: str | bytes, folders: TemplateFolders = NO_FOLDERS
) -> tuple[list[Item], dict[str, Any]]:
    """The items and `meta` in `text`; an instruction's template folder as `folders` admit."""
    try:
        document = DOCUMENT.validate_json(text)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise InvalidRequestError(f"not a parlay context document (version 1): {problems}") from exc
    items: list[Item] = []
    for index, item in enumerate(document.items):
        if isinstance(item, Instruction) and item.template_dir is not None:
            where = f"item {index} (instruction {item.template!r})"
            item = attrs.evolve(item, template_dir=folders.admit(item.template_dir, where))
        items.append(_restored(item) if isinstance(item, ModelOutputJSON) else item)
    return items, dict(document.meta)


def _restored(out: ModelOutputJSON) -> ModelOutputThunk[Any]:
    events: list[Event] = [TextDelta(out.text)] if out.text else []
    events += [ToolCallEnd(call) for call in out.calls]
    if out.finish_reason is not None:  # a thunk has usage, model... only from one
        diagnostics, model = out.diagnostics, out.model
        events.append(Finish(out.finish_reason, out.usage, diagnostics=diagnostics, model=model))
    if out.error is not None:  # then nothing else is kept
        thunk = ModelOutputThunk.restored((), error=ThunkError(out.error))
    else:
        thunk = ModelOutputThunk.restored(events, out.steps)
    thunk.duration_ms, thunk.first_event_ms = out.duration_ms, out.first_event_ms
    return thunk


def save(items: Iterable[Item], path: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """`items` to `path` with `meta`, replaced whole: a reader never sees half a file."""
    text = to_json(items, meta=meta)
    fd, temporary = tempfile.mkstemp(dir=Path(path).parent, prefix=f".{Path(path).name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


if __name__ == "__main__":  # python -m parlay.context_schema > src/parlay/schemas/...
    print(__import__("json").dumps(document_schema(), indent=2, sort_keys=True))
