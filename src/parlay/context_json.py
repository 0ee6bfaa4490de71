"""`Context.to_json` / `Context.from_json`: a context as a versioned JSON document.

The document is described by pydantic models (`parlay.context_schema`: validated on
load, its JSON Schema committed and checked by a test), so it is never parsed by hand.
Every item keeps what it is:

- messages, loose tool calls and tool results (a result's Python `value` is kept as its
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

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
from parlay.context_problems import (
    lone_surrogate,
    surrogate_problem,
    unwritable,
    validation_problems,
)
from parlay.context_schema import (
    DOCUMENT,
    AssistantJSON,
    CallJSON,
    ComponentJSON,
    ContextDocument,
    DiagnosticsJSON,
    ImageJSON,
    InstructionJSON,
    ModelOutputJSON,
    SystemJSON,
    ToolCallJSON,
    ToolResultJSON,
    UsageJSON,
    UserJSON,
    back,
    document_schema,
    to_attrs,
)
from parlay.errors import InvalidRequestError, ThunkError
from parlay.events import Event, Finish, TextDelta, ToolCallEnd, Usage
from parlay.image import Image
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
def _call(call: ToolCall) -> CallJSON:
    arguments = _json(call.arguments, "tool call", "arguments")
    return CallJSON(name=call.name, arguments=arguments, id=call.id)


def _json(value: Any, what: str, field: str) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception as exc:  # pydantic's serialization error, or the value's own
        _refuse_surrogates(value, field, exc)
        raise InvalidRequestError(f"a {what} holds a value with no JSON form: {exc}") from exc


def _refuse_surrogates(value: Any, field: str, exc: Exception) -> None:
    # A lone surrogate is text that cannot be written, not a value to leave out.
    found = lone_surrogate(value, field)
    if found is not None:
        raise InvalidRequestError(surrogate_problem(*found)) from exc


def _result(result: ToolResult) -> ToolResultJSON:
    try:
        value, kept_type = to_jsonable_python(result.value), None
    except Exception as exc:  # a DataFrame, a socket: its output text is what the model saw
        _refuse_surrogates(result.value, "value", exc)
        value, kept_type = None, f"{type(result.value).__module__}.{type(result.value).__name__}"
    return ToolResultJSON(
        images=_images(result.images),
        call_id=result.call_id,
        name=result.name,
        output=result.output,
        error=result.error,
        value=value,
        value_type=kept_type,
    )


def _images(images: tuple[Image, ...]) -> tuple[Any, ...]:
    return tuple(ImageJSON(**attrs.asdict(image)) for image in images)


def _message(message: Message) -> Any:
    if isinstance(message, SystemMessage):
        return SystemJSON(content=message.content)
    if isinstance(message, UserMessage):
        return UserJSON(content=message.content, images=_images(message.images))
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
            DiagnosticsJSON(**attrs.asdict(diagnostics)) if diagnostics is not None else None
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
            variables=_json(item.variables, "instruction", "variables"),
            template_dir=item.template_dir,
        )
    if isinstance(item, ModelOutputThunk):
        return _output(item)
    kind = item.type if isinstance(item, RenderedComponent) else _type_name(item)
    return ComponentJSON(type=kind, messages=tuple(_message(m) for m in item.as_messages()))


def _type_name(item: Any) -> str:
    return f"{type(item).__module__}.{type(item).__qualname__}"


_KINDS: dict[type[Any], str] = {
    SystemMessage: "system",
    UserMessage: "user",
    AssistantMessage: "assistant",
    ToolCall: "tool_call",
    ToolResult: "tool_result",
    Instruction: "instruction",
    ModelOutputThunk: "model_output",
}


def _item_model(index: int, item: Item) -> Any:
    try:
        return item_json(item)
    except InvalidRequestError as exc:
        kind = _KINDS.get(type(item), "component")
        raise InvalidRequestError(f"item {index} ({kind}) cannot be written: {exc}") from exc


def to_json(ctx: Context, *, indent: int | None = None, meta: dict[str, Any] | None = None) -> str:
    models = tuple(_item_model(index, item) for index, item in enumerate(ctx))
    document = ContextDocument(items=models, meta=meta or {})
    try:
        return document.model_dump_json(indent=indent)
    except PydanticSerializationError as exc:
        raise InvalidRequestError(unwritable(models, document.meta, exc)) from exc


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


def _tool_call(call: CallJSON) -> ToolCall:
    return ToolCall(call.name, dict(call.arguments), id=call.id)


def _loaded_message(message: Any) -> Message:
    if isinstance(message, SystemJSON):
        return SystemMessage(message.content)
    if isinstance(message, UserJSON):
        return UserMessage(message.content, back(message.images))
    if isinstance(message, AssistantJSON):
        return AssistantMessage(message.content, tuple(_tool_call(c) for c in message.tool_calls))
    return ToolResult(
        message.call_id,
        message.name,
        message.output,
        message.error,
        message.value,
        back(message.images),
    )


def _loaded_output(output: ModelOutputJSON) -> ModelOutputThunk[Any]:
    if output.error is not None:
        thunk = ModelOutputThunk.restored((), error=ThunkError(output.error))
    else:
        events: list[Event] = [TextDelta(output.text)] if output.text else []
        events.extend(ToolCallEnd(_tool_call(c)) for c in output.calls)
        usage = to_attrs(Usage, output.usage) if output.usage is not None else None
        diagnostics = back(output.diagnostics)
        if output.finish_reason is not None:  # a thunk has usage, model... only from one
            events.append(
                Finish(output.finish_reason, usage, diagnostics=diagnostics, model=output.model)
            )
        steps = tuple(_loaded_message(m) for m in output.steps)
        thunk = ModelOutputThunk.restored(events, steps)
    thunk.duration_ms, thunk.first_event_ms = output.duration_ms, output.first_event_ms
    return thunk


def loaded_item(item: Any, folders: TemplateFolders = NO_FOLDERS, where: str = "an item") -> Item:
    """The item a document model holds; an instruction's template folder only as
    `folders` admits it."""
    if isinstance(item, ToolCallJSON):
        return _tool_call(item)
    if isinstance(item, InstructionJSON):
        folder = item.template_dir
        if folder is not None:
            folder = folders.admit(folder, f"{where} (instruction {item.template!r})")
        return Instruction(item.template, dict(item.variables), folder)
    if isinstance(item, ModelOutputJSON):
        return _loaded_output(item)
    if isinstance(item, ComponentJSON):
        return RenderedComponent(item.type, tuple(_loaded_message(m) for m in item.messages))
    return _loaded_message(item)


def from_document(document: ContextDocument, folders: TemplateFolders = NO_FOLDERS) -> Context:
    ctx = Context()
    for index, item in enumerate(document.items):
        ctx = ctx.insert(loaded_item(item, folders, f"item {index}"))
    return ctx


def from_json(
    text: str | bytes, *, template_dirs: Folders = (), trust_template_dirs: bool = False
) -> Context:
    """The context in `text`. An instruction naming a template folder is refused unless
    the folder is one of `template_dirs` or `trust_template_dirs` is set
    (`parlay.template_folders`)."""
    folders = TemplateFolders(template_dirs, trust_template_dirs)
    return from_document(read_document(text), folders)


def save(session: Session, path: str | os.PathLike[str]) -> None:
    """`session.ctx` to `path`, replaced whole: a reader never sees half a file."""
    from parlay.session_load import meta_of

    text = to_json(session.ctx, meta=meta_of(session))
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(
    path: str | os.PathLike[str],
    *,
    template_dirs: Folders = (),
    trust_template_dirs: bool = False,
) -> Context:
    """The context saved at `path` (template folders: as in `from_json`)."""
    return load_with_meta(
        path, template_dirs=template_dirs, trust_template_dirs=trust_template_dirs
    )[0]


def load_with_meta(
    path: str | os.PathLike[str],
    *,
    template_dirs: Folders = (),
    trust_template_dirs: bool = False,
) -> tuple[Context, dict[str, Any]]:
    """The context saved at `path`, and what `save` wrote beside it (`meta`)."""
    document = read_document(Path(path).read_bytes())
    folders = TemplateFolders(template_dirs, trust_template_dirs)
    return from_document(document, folders), dict(document.meta)


__all__ = [
    "ContextDocument",
    "RenderedComponent",
    "document_schema",
    "from_json",
    "load",
    "load_with_meta",
    "read_document",
    "save",
    "to_json",
]
