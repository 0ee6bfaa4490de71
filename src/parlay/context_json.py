"""`Context.to_json` / `Context.from_json`: a context as a versioned JSON document.

The document is described by pydantic models (validated on load, JSON Schema from
`document_schema()`, committed as `parlay/schemas/context-v1.schema.json` and checked by a
test), so it is never parsed by hand. Every item keeps what it is:

- messages, loose tool calls and tool results (a result's Python `value` is kept as its
  JSON form: a dict, list, str, number, bool or null; a pydantic model comes back as its
  dict, a value with no JSON form as null with its type's name in `value_type`);
- `Instruction`s with their template and variables (which must be JSON values);
- a session's `ModelOutputThunk`s, computed, with their text, calls, the rounds before
  the answer (`steps`), finish reason, usage, model, diagnostics and timings, or the error
  they failed with; loading gives a thunk that is already computed (`ModelOutputThunk.
  restored`). Not kept: the stream's granularity and the provider's `raw` response;
- any other component as the messages it renders to, its type named (`component`).

A pending thunk is run first (`to_json` blocks on it, as `ctx.messages()` does).
Version 1; a later version reads every earlier one.
"""

from __future__ import annotations

import functools
import operator
import os
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

import attrs
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, create_model
from pydantic_core import to_jsonable_python

from parlay.components import Instruction
from parlay.context import (
    AssistantMessage,
    Context,
    Item,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.diagnostics import Diagnostics
from parlay.errors import InvalidRequestError, ThunkError
from parlay.events import Event, Finish, FinishReason, TextDelta, ToolCallEnd, Usage
from parlay.thunk import ModelOutputThunk

if TYPE_CHECKING:
    from parlay.session import Session

FORMAT = "parlay.context"
VERSION = 1

_MIRRORS: dict[type[Any], type[BaseModel]] = {}


def _mirrored(annotation: Any) -> Any:
    """`annotation` with every attrs class in it replaced by its pydantic mirror."""
    if attrs.has(annotation):
        return _mirror(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is tuple:
        return tuple[tuple(_mirrored(a) for a in args)]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, (_mirrored(a) for a in args))
    return annotation


def _mirror(cls: type[Any]) -> type[BaseModel]:
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


def _to_attrs(cls: type[Any], model: BaseModel) -> Any:
    return cls(**{f.name: _back(getattr(model, f.name)) for f in attrs.fields(cls)})


def _back(value: Any) -> Any:
    if isinstance(value, BaseModel):
        (cls,) = [c for c, m in _MIRRORS.items() if isinstance(value, m)]
        return _to_attrs(cls, value)
    if isinstance(value, (tuple, list)):
        return tuple(_back(v) for v in value)
    return value


UsageJSON = _mirror(Usage)
DiagnosticsJSON = _mirror(Diagnostics)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CallJSON(_Strict):
    name: str
    arguments: dict[str, JsonValue]
    id: str


class SystemJSON(_Strict):
    kind: Literal["system"] = "system"
    content: str


class UserJSON(_Strict):
    kind: Literal["user"] = "user"
    content: str


class AssistantJSON(_Strict):
    kind: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[CallJSON, ...] = ()


class ToolCallJSON(CallJSON):
    kind: Literal["tool_call"] = "tool_call"


class ToolResultJSON(_Strict):
    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str = ""
    error: str | None = None
    value: JsonValue = None
    value_type: str | None = Field(default=None, description="The Python type of a value not kept.")


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


_DOCUMENT = TypeAdapter(ContextDocument)


def document_schema() -> dict[str, Any]:
    """The JSON Schema of the document `Context.to_json` writes."""
    return _DOCUMENT.json_schema()


@attrs.frozen
class RenderedComponent:
    """A component read back from JSON: the messages it rendered to, and its type's name."""

    type: str
    messages: tuple[Message, ...]

    def as_messages(self) -> tuple[Message, ...]:
        return self.messages


# -- writing ---------------------------------------------------------------------------
def _call(call: ToolCall) -> CallJSON:
    return CallJSON(name=call.name, arguments=_json(call.arguments, "tool call"), id=call.id)


def _json(value: Any, what: str) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception as exc:  # pydantic's serialization error, or the value's own
        raise InvalidRequestError(f"a {what} holds a value with no JSON form: {exc}") from exc


def _result(result: ToolResult) -> ToolResultJSON:
    try:
        value, kept_type = to_jsonable_python(result.value), None
    except Exception:  # a DataFrame, a socket: its output text is what the model saw
        value, kept_type = None, f"{type(result.value).__module__}.{type(result.value).__name__}"
    return ToolResultJSON(
        call_id=result.call_id,
        name=result.name,
        output=result.output,
        error=result.error,
        value=value,
        value_type=kept_type,
    )


def _message(message: Message) -> Any:
    if isinstance(message, SystemMessage):
        return SystemJSON(content=message.content)
    if isinstance(message, UserMessage):
        return UserJSON(content=message.content)
    if isinstance(message, AssistantMessage):
        return AssistantJSON(
            content=message.content, tool_calls=tuple(_call(c) for c in message.tool_calls)
        )
    return _result(message)


def _output(thunk: ModelOutputThunk[Any]) -> ModelOutputJSON:
    duration, first = thunk.duration_ms, thunk.first_event_ms
    try:
        text = thunk.value
    except Exception as exc:
        failed = f"{type(exc).__name__}: {exc}"
        return ModelOutputJSON(error=failed, duration_ms=duration, first_event_ms=first)
    usage, diagnostics = thunk.usage, thunk.diagnostics
    return ModelOutputJSON(
        text=text,
        calls=tuple(_call(c) for c in thunk.tools),
        steps=tuple(_message(m) for m in thunk.steps),
        finish_reason=thunk.finish_reason,
        usage=UsageJSON(**attrs.asdict(usage)) if usage is not None else None,
        model=thunk.model,
        diagnostics=(
            DiagnosticsJSON(**attrs.asdict(diagnostics, retain_collection_types=True))
            if diagnostics is not None
            else None
        ),
        duration_ms=duration,
        first_event_ms=first,
    )


def item_json(item: Item) -> Any:
    """One item as its document model."""
    if isinstance(item, ToolCall):
        return ToolCallJSON(**_call(item).model_dump())
    if isinstance(item, SystemMessage | UserMessage | AssistantMessage | ToolResult):
        return _message(item)
    if isinstance(item, Instruction):
        return InstructionJSON(
            template=item.template,
            variables=_json(item.variables, "instruction"),
            template_dir=item.template_dir,
        )
    if isinstance(item, ModelOutputThunk):
        return _output(item)
    kind = item.type if isinstance(item, RenderedComponent) else _type_name(item)
    return ComponentJSON(type=kind, messages=tuple(_message(m) for m in item.as_messages()))


def _type_name(item: Any) -> str:
    return f"{type(item).__module__}.{type(item).__qualname__}"


def to_json(ctx: Context, *, indent: int | None = None, meta: dict[str, Any] | None = None) -> str:
    document = ContextDocument(items=tuple(item_json(i) for i in ctx), meta=meta or {})
    return document.model_dump_json(indent=indent)


# -- reading ---------------------------------------------------------------------------
def read_document(text: str | bytes) -> ContextDocument:
    """The document in `text`, validated; a document of another kind or version is an
    `InvalidRequestError` saying which."""
    try:
        return _DOCUMENT.validate_json(text)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InvalidRequestError(f"not a parlay context document (version 1): {exc}") from exc


def _tool_call(call: CallJSON) -> ToolCall:
    return ToolCall(call.name, dict(call.arguments), id=call.id)


def _loaded_message(message: Any) -> Message:
    if isinstance(message, SystemJSON):
        return SystemMessage(message.content)
    if isinstance(message, UserJSON):
        return UserMessage(message.content)
    if isinstance(message, AssistantJSON):
        return AssistantMessage(message.content, tuple(_tool_call(c) for c in message.tool_calls))
    return ToolResult(message.call_id, message.name, message.output, message.error, message.value)


def _loaded_output(output: ModelOutputJSON) -> ModelOutputThunk[Any]:
    if output.error is not None:
        thunk = ModelOutputThunk.restored((), error=ThunkError(output.error))
    else:
        events: list[Event] = [TextDelta(output.text)] if output.text else []
        events.extend(ToolCallEnd(_tool_call(c)) for c in output.calls)
        usage = _to_attrs(Usage, output.usage) if output.usage is not None else None
        diagnostics = _back(output.diagnostics)
        if output.finish_reason is not None:  # a thunk has usage, model... only from one
            events.append(
                Finish(output.finish_reason, usage, diagnostics=diagnostics, model=output.model)
            )
        steps = tuple(_loaded_message(m) for m in output.steps)
        thunk = ModelOutputThunk.restored(events, steps)
    thunk.duration_ms, thunk.first_event_ms = output.duration_ms, output.first_event_ms
    return thunk


def loaded_item(item: Any) -> Item:
    if isinstance(item, ToolCallJSON):
        return _tool_call(item)
    if isinstance(item, InstructionJSON):
        return Instruction(item.template, dict(item.variables), item.template_dir)
    if isinstance(item, ModelOutputJSON):
        return _loaded_output(item)
    if isinstance(item, ComponentJSON):
        return RenderedComponent(item.type, tuple(_loaded_message(m) for m in item.messages))
    return _loaded_message(item)


def from_document(document: ContextDocument) -> Context:
    ctx = Context()
    for item in document.items:
        ctx = ctx.insert(loaded_item(item))
    return ctx


def from_json(text: str | bytes) -> Context:
    return from_document(read_document(text))


def save(session: Session, path: str | os.PathLike[str]) -> None:
    """`session.ctx` to `path`, replaced whole: a reader never sees half a file."""
    meta = {
        "backend": getattr(session.backend, "name", type(session.backend).__name__),
        "tools": session.tools.names,
        "branch": session.branch.name,
    }
    text = to_json(session.ctx, meta=meta)
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(path: str | os.PathLike[str]) -> Context:
    return from_json(Path(path).read_bytes())


__all__ = [
    "ContextDocument",
    "RenderedComponent",
    "document_schema",
    "from_json",
    "load",
    "read_document",
    "save",
    "to_json",
]
