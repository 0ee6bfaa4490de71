"""`Context.to_json` / `Context.from_json`: a context as a versioned JSON document.

Below the context: this module writes and reads items, and `Context.from_json` makes
the context of the items read (so neither module imports the other in a cycle).

The document is described by one pydantic `TypeAdapter` (`parlay.context_schema`:
a file is validated straight into the attrs values, its JSON Schema committed and
checked by a test), so it is never parsed by hand. Every item keeps what it is:

- messages, loose tool calls and tool results with their images and the deferred tools
  they name (`references`; a result's Python `value` is kept as its
  JSON form: a dict, list, str, number, bool or null; a pydantic model comes back as its
  dict, a value with no JSON form as null with its type's name in `value_type`);
- `Instruction`s with their template and variables (which must be JSON values), and
  their template folder: kept, but a loaded one is refused unless the caller allows it
  (`parlay.template_folders`), so a file never chooses which templates run;
- a session's `ModelOutputThunk`s, computed, with their text, calls, the rounds before
  the answer (`steps`), finish reason, usage, model, diagnostics and timings, or the error
  they failed with; loading gives a thunk that is already computed (`ModelOutputThunk.
  restored`). Not kept: the stream's granularity and the provider's `raw` response;
- any other component as the messages it renders to, its type named (`component`).

A pending thunk is run first (`to_json` blocks on it, as `ctx.messages()` does). Text
with no UTF-8 form (a lone surrogate) cannot be written: the error names the item.
Version 1; a later version reads every earlier one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from pydantic import ValidationError
from pydantic_core import to_json as json_bytes
from pydantic_core import to_jsonable_python

from parlay.components import Instruction
from parlay.context_problems import (
    lone_surrogate,
    surrogate_problem,
    unwritable,
    validation_problems,
)
from parlay.context_schema import (
    DOCUMENT,
    FORMAT,
    VALUE_TYPE,
    VERSION,
    ComponentJSON,
    ContextDocument,
    ModelOutputJSON,
    document_schema,
)
from parlay.errors import InvalidRequestError, ThunkError
from parlay.events import Event, Finish, TextDelta, ToolCallEnd
from parlay.messages import (
    AssistantMessage,
    Item,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.template_folders import NO_FOLDERS, Folders, TemplateFolders
from parlay.thunk import ModelOutputThunk

if TYPE_CHECKING:
    from parlay.session import Session


@attrs.frozen
class RenderedComponent:
    """A component read back from JSON: the messages it rendered to, and its type's name."""

    type: str
    messages: tuple[Message, ...]

    def as_messages(self) -> tuple[Message, ...]:
        return self.messages


# -- writing ---------------------------------------------------------------------------
_KINDS: tuple[tuple[type[Any], str], ...] = (
    (SystemMessage, "system"),
    (UserMessage, "user"),
    (AssistantMessage, "assistant"),
    (ToolCall, "tool_call"),
    (ToolResult, "tool_result"),
    (Instruction, "instruction"),
    (ModelOutputThunk, "model_output"),
)
# Written only when not empty, so a document without them reads as it did before they
# were kept.
_WHEN_ANY = ("images", "references")


def _kind(item: Any) -> str:
    return next((kind for cls, kind in _KINDS if isinstance(item, cls)), "component")


def _fields(value: Any) -> dict[str, Any]:
    """An attrs value as its fields (attrs values in tuples too), in their order."""
    out: dict[str, Any] = {}
    for name in (f.name for f in attrs.fields(type(value))):
        inner = getattr(value, name)
        if isinstance(value, ToolResult) and name == "value":
            out |= _value(value)
        elif inner or name not in _WHEN_ANY:
            out[name] = _plain(inner)
    return out


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return _fields(value)
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _value(result: ToolResult) -> dict[str, Any]:
    try:
        return {"value": to_jsonable_python(result.value), VALUE_TYPE: None}
    except Exception as exc:  # a DataFrame, a socket: its output text is what the model saw
        _refuse_surrogates(result.value, "value", exc)
        kept = f"{type(result.value).__module__}.{type(result.value).__name__}"
        return {"value": None, VALUE_TYPE: kept}


def _jsonable(value: Any, what: str) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception as exc:  # pydantic's serialization error, or the value's own
        _refuse_surrogates(value, "", exc)
        raise InvalidRequestError(f"a {what} holds a value with no JSON form: {exc}") from exc


def _refuse_surrogates(value: Any, field: str, exc: Exception) -> None:
    # A lone surrogate is text that cannot be written, not a value to leave out.
    found = lone_surrogate(value, field)
    if found is not None:
        raise InvalidRequestError(surrogate_problem(*found)) from exc


def _record(value: Any, kind: str) -> dict[str, Any]:
    """A message, call or instruction as the document holds it."""
    fields: dict[str, Any] = _jsonable(_plain(value), kind.replace("_", " "))
    # Version 1 wrote a loose call's kind after its fields.
    return fields | {"kind": kind} if kind == "tool_call" else {"kind": kind} | fields


def _output(thunk: ModelOutputThunk[Any]) -> dict[str, Any]:
    out = ModelOutputJSON(duration_ms=thunk.duration_ms, first_event_ms=thunk.first_event_ms)
    try:
        text = thunk.value
    except Exception as exc:
        return out.model_copy(update={"error": f"{type(exc).__name__}: {exc}"}).model_dump()
    return out.model_dump() | {
        "text": text,
        "calls": [_jsonable(_plain(c), "tool call") for c in thunk.tools],
        "steps": [_record(m, _kind(m)) for m in thunk.steps],
        "finish_reason": thunk.finish_reason,
        "usage": _plain(thunk.usage),
        "model": thunk.model,
        "diagnostics": _jsonable(_plain(thunk.diagnostics), "diagnostics"),
    }


def item_json(item: Item) -> dict[str, Any]:
    """One item as the document holds it."""
    kind = _kind(item)
    if kind == "model_output":
        return _output(item)  # type: ignore[arg-type]
    if kind != "component":
        return _record(item, kind)
    name = item.type if isinstance(item, RenderedComponent) else _type_name(item)
    messages = [_record(m, _kind(m)) for m in item.as_messages()]  # type: ignore[union-attr]
    return {"kind": kind, "type": name, "messages": messages}


def _type_name(item: Any) -> str:
    return f"{type(item).__module__}.{type(item).__qualname__}"


def _item_record(index: int, item: Item) -> dict[str, Any]:
    try:
        return item_json(item)
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"item {index} ({_kind(item)}) cannot be written: {exc}") from exc


def to_json(
    items: Iterable[Item], *, indent: int | None = None, meta: dict[str, Any] | None = None
) -> str:
    """`items` (a context) as the document, with `meta` beside them."""
    records = [_item_record(index, item) for index, item in enumerate(items)]
    meta = _jsonable(meta or {}, "meta")
    document = {"format": FORMAT, "version": VERSION, "items": records, "meta": meta}
    try:
        return json_bytes(document, indent=indent, inf_nan_mode="null").decode()
    except ValueError as exc:  # pydantic's serialization error: text with no UTF-8 form
        raise InvalidRequestError(unwritable(records, meta, exc)) from exc


# -- reading ---------------------------------------------------------------------------
def read_document(text: str | bytes) -> ContextDocument:
    """The document in `text`, validated; a document of another kind or version is an
    `InvalidRequestError` saying which."""
    try:
        return DOCUMENT.validate_json(text)
    except ValidationError as exc:
        raise InvalidRequestError(
            f"not a parlay context document (version 1): {validation_problems(exc)}"
        ) from exc


def _loaded_output(output: ModelOutputJSON) -> ModelOutputThunk[Any]:
    if output.error is not None:
        thunk = ModelOutputThunk.restored((), error=ThunkError(output.error))
    else:
        events: list[Event] = [TextDelta(output.text)] if output.text else []
        events.extend(ToolCallEnd(c) for c in output.calls)
        if output.finish_reason is not None:  # a thunk has usage, model... only from one
            diagnostics, model = output.diagnostics, output.model
            events.append(
                Finish(output.finish_reason, output.usage, diagnostics=diagnostics, model=model)
            )
        thunk = ModelOutputThunk.restored(events, output.steps)
    thunk.duration_ms, thunk.first_event_ms = output.duration_ms, output.first_event_ms
    return thunk


def loaded_item(item: Any, folders: TemplateFolders = NO_FOLDERS, where: str = "an item") -> Item:
    """The item a validated document holds; an instruction's template folder only as
    `folders` admits it."""
    if isinstance(item, Instruction) and item.template_dir is not None:
        folder = folders.admit(item.template_dir, f"{where} (instruction {item.template!r})")
        return attrs.evolve(item, template_dir=folder)
    if isinstance(item, ModelOutputJSON):
        return _loaded_output(item)
    if isinstance(item, ComponentJSON):
        return RenderedComponent(item.type, item.messages)
    return item  # type: ignore[no-any-return]


def document_items(document: ContextDocument, folders: TemplateFolders = NO_FOLDERS) -> list[Item]:
    """The items `document` holds, oldest first (`Context.from_json` makes the context):
    an instruction's template folder only as `folders` admits it."""
    return [
        loaded_item(item, folders, f"item {index}") for index, item in enumerate(document.items)
    ]


def read_file(
    path: str | os.PathLike[str],
    *,
    template_dirs: Folders = (),
    trust_template_dirs: bool = False,
) -> tuple[list[Item], dict[str, Any]]:
    """The items saved at `path`, and what `save` wrote beside them (`meta`); template
    folders as in `Context.from_json`."""
    document = read_document(Path(path).read_bytes())
    folders = TemplateFolders(template_dirs, trust_template_dirs)
    return document_items(document, folders), dict(document.meta)


def save(session: Session, path: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """`session.ctx` to `path` with `meta` beside it, replaced whole: a reader never sees
    half a file."""
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


__all__ = [
    "ContextDocument",
    "RenderedComponent",
    "document_items",
    "document_schema",
    "read_document",
    "read_file",
    "save",
    "to_json",
]
