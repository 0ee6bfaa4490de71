"""The bytes a context document is written as: version 1's, whatever does the writing."""

from __future__ import annotations

import json

import pytest
from syrupy.assertion import SnapshotAssertion

from parlay import (
    AssistantMessage,
    Context,
    Diagnostics,
    Finish,
    Image,
    Instruction,
    InvalidRequestError,
    ModelOutputThunk,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallEnd,
    ToolResult,
    Usage,
    UserMessage,
)
from parlay.context_schema import RenderedComponent
from parlay.diagnostics import RetryRecord

PNG = Image(media_type="image/png", data="aGVsbG8=")


def every_item() -> Context:
    call = ToolCall("add", {"a": 1, "b": [2.5, None]}, id="c1")
    diagnostics = Diagnostics(
        contract_injected=True, retries=(RetryRecord("unknown_tool", "no 'ad'"),), answer_share=0.5
    )
    thunk = ModelOutputThunk.restored(
        [TextDelta("sum"), ToolCallEnd(call), Finish("tool_calls", Usage(3, 4), diagnostics=diagnostics, model="m")],
        [AssistantMessage("", (call,)), ToolResult("c1", "add", "3", value=3)],
    )  # fmt: skip
    thunk.duration_ms, thunk.first_event_ms = 12.5, 1.0
    return Context(
        [
            SystemMessage("be brief"),
            UserMessage("look", (PNG, Image(url="http://x/y.png"))),
            Instruction("query", {"question": "why?"}, None),
            thunk,
            call,
            ToolResult("c1", "add", "3", value={"sum": 3}, images=(PNG,)),
            ToolResult("c2", "open", "<socket>", value=object()),
            ToolResult("c3", "search", "", "not found"),
            RenderedComponent("my.Note", (UserMessage("note"),)),
        ]
    )


@pytest.mark.parametrize("indent", [None, 2])
def test_a_document_is_written_byte_for_byte_as_version_1_wrote_it(
    indent: int | None, snapshot: SnapshotAssertion
) -> None:
    assert every_item().to_json(indent=indent) == snapshot


def test_a_tool_results_references_are_kept_and_left_out_when_empty() -> None:
    found = ToolResult("c1", "tool_search", "2 tools", references=("weather", "news"))
    text = Context([found, ToolResult("c2", "add", "3")]).to_json()
    items = json.loads(text)["items"]
    assert items[0]["references"] == ["weather", "news"] and "references" not in items[1]
    assert Context.from_json(text)[0].references == ("weather", "news")


def test_a_retry_record_without_its_reason_is_refused() -> None:
    # The hand mirror read a missing reason as attrs' NOTHING sentinel: a broken value.
    output = {"kind": "model_output", "diagnostics": {"retries": [{"detail": "d"}]}}
    text = json.dumps({"format": "parlay.context", "version": 1, "items": [output]})
    with pytest.raises(
        InvalidRequestError, match=r"diagnostics\.retries\.0\.reason: Field required"
    ):
        Context.from_json(text)


def test_a_value_of_another_type_than_its_field_says_is_written_as_it_is() -> None:
    # attrs does not check types: a count given as a float, content given as a number, a
    # call id given as an int are written as they are, as version 1 wrote them (a writer
    # that picked a value's kind by its fields' types failed on these).
    items = [
        UserMessage(5),  # type: ignore[arg-type]
        ToolCall("f", {"a": (1, 2)}, id=7),  # type: ignore[arg-type]
        ModelOutputThunk.restored([TextDelta("x"), Finish("stop", Usage(1.5, 2))]),  # type: ignore[arg-type]
    ]
    items_json = json.loads(Context(items).to_json())["items"]
    assert items_json[0] == {"kind": "user", "content": 5}
    assert items_json[1] == {"name": "f", "arguments": {"a": [1, 2]}, "id": 7, "kind": "tool_call"}
    assert items_json[2]["usage"] == {"prompt_tokens": 1.5, "completion_tokens": 2}
