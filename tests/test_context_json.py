"""A context you can keep: `Context.to_json` / `from_json`, `session.save` / `Session.load`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parlay
from parlay import (
    AssistantMessage,
    Context,
    Diagnostics,
    Finish,
    Instruction,
    InvalidRequestError,
    ModelOutputThunk,
    ScriptedBackend,
    Session,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallEnd,
    ToolResult,
    Usage,
    UserMessage,
)
from parlay.backends.scripted import calls
from parlay.context_schema import RenderedComponent, document_schema
from parlay.diagnostics import RetryRecord

SCHEMA = Path(parlay.__file__).parent / "schemas" / "context-v1.schema.json"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def view(item: Any) -> Any:
    """Everything public about an item, to compare an item with its round trip."""
    if isinstance(item, ToolResult):
        return ("result", item, item.value)
    if isinstance(item, ModelOutputThunk):
        try:
            text = item.value
        except Exception as exc:
            return ("failed", str(exc), item.duration_ms)
        return (
            "output", text, item.tools, item.steps, item.finish_reason, item.usage,
            item.model, item.diagnostics, item.duration_ms, item.first_event_ms,
            tuple(view(m) for m in item.steps),
        )  # fmt: skip
    if isinstance(item, SystemMessage | UserMessage | AssistantMessage | ToolCall | Instruction):
        return (type(item).__name__, item)
    return ("component", item.as_messages())  # a user's own comes back as what it rendered


def views(ctx: Context) -> list[Any]:
    return [view(i) for i in ctx]


@attrs.frozen
class Note:
    """A component of a user's own."""

    text: str

    def as_messages(self) -> tuple[parlay.Message, ...]:
        return (UserMessage(f"note: {self.text}"),)


def test_every_kind_of_item_survives_the_round_trip() -> None:
    backend = ScriptedBackend([calls(("add", {"a": 2, "b": 3})), "five", "ok"])
    session = Session(backend, tools=[add], system="Be brief.")
    session.query({"numbers": [2, 3]}, "What is their sum?").value  # noqa: B018
    session.ctx = session.ctx.insert(Note("remember")).insert(ToolCall("add", {"a": 1}, id="c9"))
    session.ctx = session.ctx.insert(ToolResult("c9", "add", "1", value={"sum": 1}))
    session.chat("thanks").value  # noqa: B018
    back = Context.from_json(session.ctx.to_json())
    assert views(back) == views(session.ctx)
    assert back.messages() == session.ctx.messages()
    output = back[1 + 1]  # the query's output: its tool round is in its steps
    assert isinstance(output, ModelOutputThunk) and output.is_computed
    assert [type(m).__name__ for m in output.steps] == ["AssistantMessage", "ToolResult"]
    assert output.steps[1].value == 5 and output.duration_ms is not None
    assert isinstance(back[3], RenderedComponent) and back[3].type.endswith("Note")


def test_a_thunks_diagnostics_usage_and_timings_survive() -> None:
    diagnostics = Diagnostics(
        contract_injected=True, action_format="json", calls_parsed=1,
        retries=(RetryRecord("unknown_tool", "no tool 'ad'"),), rules=("recount_calls",),
        answer_share=0.25, notes=("a note",),
    )  # fmt: skip
    thunk = ModelOutputThunk.restored(
        [
            TextDelta("Let me add."),
            ToolCallEnd(ToolCall("add", {"a": 1, "b": 2}, id="c1")),
            Finish("tool_calls", Usage(10, 4), diagnostics=diagnostics, model="m.gguf"),
        ]
    )
    thunk.duration_ms, thunk.first_event_ms = 12.5, 3.25
    ctx = Context([UserMessage("add 1 and 2"), thunk])
    back = Context.from_json(ctx.to_json())[-1]
    assert view(back) == view(thunk)
    assert back.diagnostics.retries[0] == RetryRecord("unknown_tool", "no tool 'ad'")


def test_the_schema_has_every_field_of_the_attrs_values() -> None:
    # A field the engine adds to Diagnostics is kept without anyone editing the schema.
    defs = document_schema()["$defs"]
    for cls in (Diagnostics, RetryRecord, Usage, UserMessage, ToolCall):
        assert set(defs[cls.__name__]["properties"]) >= {f.name for f in attrs.fields(cls)}


def test_a_failed_turn_comes_back_failed() -> None:
    session = Session(ScriptedBackend([]))
    thunk = session.chat("hi")
    with pytest.raises(AssertionError):
        thunk.value  # noqa: B018  (the script ran out of replies)
    ctx = Context([UserMessage("hi"), thunk])
    back = Context.from_json(ctx.to_json())[-1]
    with pytest.raises(parlay.ThunkError, match="ran out of replies"):
        back.value  # noqa: B018


def test_a_pending_turn_is_run_before_it_is_written() -> None:
    session = Session(ScriptedBackend(["later"]))
    thunk = session.chat("hi")
    assert not thunk.is_started
    document = json.loads(session.ctx.to_json())
    assert document["items"][-1]["text"] == "later" and thunk.is_computed


def test_a_value_with_no_json_form_keeps_its_output_and_names_its_type() -> None:
    result = ToolResult("c1", "open", output="<socket>", value=object())
    back = Context.from_json(Context([result]).to_json())[0]
    assert back == result and back.value is None
    item = json.loads(Context([result]).to_json())["items"][0]
    assert item["value_type"] == "builtins.object"


def test_an_instruction_whose_variables_have_no_json_form_is_refused_clearly() -> None:
    ctx = Context([Instruction("query", {"object": object()})])
    with pytest.raises(InvalidRequestError, match="instruction holds a value with no JSON form"):
        ctx.to_json()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"format": "parlay.context", "version": 2, "items": []}',
        '{"format": "other", "version": 1, "items": []}',
        '{"format": "parlay.context", "version": 1, "items": [{"kind": "wizard"}]}',
    ],
)
def test_a_document_of_another_kind_or_version_is_refused_with_a_clear_error(text: str) -> None:
    with pytest.raises(InvalidRequestError, match="not a parlay context document"):
        Context.from_json(text)


def test_the_committed_schema_is_the_one_the_code_writes() -> None:
    committed = json.loads(SCHEMA.read_text())
    assert committed == document_schema(), (
        "the context document changed: if the change is compatible, regenerate with "
        "`python -m parlay.context_schema > src/parlay/schemas/context-v1.schema.json`; "
        "if not, make a version 2 that reads version 1"
    )


def test_a_written_document_validates_against_the_committed_schema() -> None:
    session = Session(ScriptedBackend([calls(("add", {"a": 1, "b": 1})), "two"]), tools=[add])
    session.query(None, "1+1?").value  # noqa: B018
    jsonschema.validate(json.loads(session.ctx.to_json()), json.loads(SCHEMA.read_text()))


def test_session_save_and_load_go_on_from_the_same_context(tmp_path: Path) -> None:
    session = Session(ScriptedBackend(["one"]), tools=[add], system="sys")
    session.chat("first").value  # noqa: B018
    path = tmp_path / "kept.json"
    session.save(path)
    meta = json.loads(path.read_text())["meta"]
    assert meta == {
        "backend": "scripted",
        "model": None,
        "tools": ["add"],
        "tool_paths": {"add": f"{add.__module__}:add"},
        "session_class": "parlay.session:Session",
        "branch": "main",
    }
    backend = ScriptedBackend(["two"])
    loaded = Session.load(path, backend, tools=[add])
    assert loaded.ctx.messages() == session.ctx.messages()
    loaded.chat("second").value  # noqa: B018
    assert [m.content for m in backend.requests[0].messages] == ["sys", "first", "one", "second"]


# -- the property: any context survives the round trip unchanged -----------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
texts = st.text(max_size=20)
tool_calls = st.builds(
    ToolCall, st.text(min_size=1, max_size=8), st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    id=st.text(min_size=1, max_size=8),
)  # fmt: skip
messages = st.one_of(
    st.builds(SystemMessage, texts),
    st.builds(UserMessage, texts),
    st.builds(AssistantMessage, texts, st.lists(tool_calls, max_size=2).map(tuple)),
    st.builds(
        ToolResult,
        st.text(max_size=8),
        st.text(max_size=8),
        texts,
        st.none() | texts,
        value=json_values,
    ),
)
diagnostics = st.none() | st.builds(
    Diagnostics,
    contract_injected=st.booleans(),
    calls_parsed=st.integers(0, 5),
    retries=st.lists(st.builds(RetryRecord, texts, texts), max_size=2).map(tuple),
    answer_share=st.none() | st.floats(0, 1),
    rules=st.lists(st.text(max_size=6), max_size=2).map(tuple),
)


@st.composite
def outputs(draw: st.DrawFn) -> ModelOutputThunk[Any]:
    events: list[Any] = [TextDelta(t) for t in [draw(st.text(min_size=1, max_size=20))]]
    events += [ToolCallEnd(c) for c in draw(st.lists(tool_calls, max_size=2))]
    usage = draw(st.none() | st.builds(Usage, st.integers(0, 999), st.integers(0, 999)))
    reason = draw(st.sampled_from(["stop", "length", "tool_calls"]))
    events.append(
        Finish(reason, usage, diagnostics=draw(diagnostics), model=draw(st.none() | texts))
    )
    thunk = ModelOutputThunk.restored(events, draw(st.lists(messages, max_size=3)))
    thunk.duration_ms = draw(st.none() | st.floats(0, 1e6))
    return thunk


items = st.one_of(
    messages,
    tool_calls,
    outputs(),
    st.builds(Note, texts),
    st.builds(
        Instruction,
        st.just("query"),
        st.dictionaries(st.sampled_from(["object", "question"]), texts),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(items, max_size=8))
def test_any_context_survives_the_round_trip_unchanged(drawn: list[Any]) -> None:
    ctx = Context(drawn)
    text = ctx.to_json()
    back = Context.from_json(text)
    assert len(back) == len(ctx)
    assert views(back) == views(ctx)
    assert back.to_json() == text  # and writing it again gives the same document
