"""A context that cannot be written, or a file that cannot be read, gets a short error
that says where the problem is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parlay import (
    AssistantMessage,
    Context,
    Finish,
    InvalidRequestError,
    ModelOutputThunk,
    ScriptedBackend,
    Session,
    TextDelta,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.context_schema import to_json

LONE = "\ud800"


def test_saving_a_lone_surrogate_names_the_item(tmp_path: Path) -> None:
    session = Session(ScriptedBackend([]))
    session.ctx = Context([UserMessage("fine"), AssistantMessage("ok"), UserMessage(LONE)])
    path = tmp_path / "kept.json"
    with pytest.raises(InvalidRequestError) as refused:
        session.save(path)
    message = str(refused.value)
    assert message.startswith("item 2 (user) cannot be written: its content holds a lone")
    assert "'\\ud800'" in message and "UTF-8" in message
    assert list(tmp_path.iterdir()) == []  # no file, not even a temporary one


@pytest.mark.parametrize(
    ("item", "where"),
    [
        (ToolCall("search", {"q": f"a{LONE}"}, id="c1"), "item 0 (tool_call) cannot be written: its arguments.q"),
        (ToolCall("search", {LONE: 1}, id="c1"), "item 0 (tool_call) cannot be written: its arguments.\ud800 (the key)"),
        (ToolResult("c1", "search", output=LONE), "item 0 (tool_result) cannot be written: its output"),
        (ToolResult("c1", "search", value=[1, {"k": LONE}]), "item 0 (tool_result) cannot be written: its value[1].k"),
        (AssistantMessage("", (ToolCall("f", {}, id=LONE),)), "item 0 (assistant) cannot be written: its tool_calls[0].id"),
        (ModelOutputThunk.restored([TextDelta(LONE), Finish("stop")]), "item 0 (model_output) cannot be written: its text holds"),
        (ToolResult("c1", "search", value={LONE: 1}), "item 0 (tool_result) cannot be written: its value.\ud800 (the key)"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_anywhere_in_an_item_is_found(item: Any, where: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        Context([item]).to_json()
    assert str(refused.value).startswith(where)


def test_a_lone_surrogate_in_the_meta_is_named_as_the_meta() -> None:
    with pytest.raises(InvalidRequestError, match=r"the document's meta .* its meta\.branch"):
        to_json(Context([UserMessage("fine")]), meta={"branch": LONE})


def test_text_with_every_other_character_still_saves(tmp_path: Path) -> None:
    session = Session(ScriptedBackend([]))
    session.ctx = Context([UserMessage("\U0001f600 \u00e9 \x00 \ufffd \U0010ffff")])
    session.save(tmp_path / "kept.json")
    again = Session.load(tmp_path / "kept.json", ScriptedBackend([]))
    assert again.ctx.messages() == session.ctx.messages()


def test_a_file_with_thousands_of_bad_items_gives_a_short_error(tmp_path: Path) -> None:
    items = [{"kind": "user"} for _ in range(2000)]  # each lacks its content
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "parlay.context", "version": 1, "items": items}))
    with pytest.raises(InvalidRequestError) as refused:
        Session.load(path, ScriptedBackend([]))
    message = str(refused.value)
    assert len(message) < 2000 and len(message.splitlines()) <= 8
    assert message.startswith("not a parlay context document (version 1): 2000 problems")
    assert "items.0.user.content: Field required" in message
    assert "items.4.user.content" in message and "items.5.user" not in message
    assert message.endswith("...and 1995 more")


def test_a_file_with_a_few_bad_items_shows_them_all() -> None:
    text = json.dumps({"format": "parlay.context", "version": 1, "items": [{"kind": "wizard"}]})
    with pytest.raises(InvalidRequestError) as refused:
        Context.from_json(text)
    message = str(refused.value)
    assert "1 problem\n" in message and "items.0: " in message and "'wizard'" in message
    assert "more" not in message


def test_a_huge_value_in_a_bad_file_is_cut_in_the_error() -> None:
    text = json.dumps({"format": "parlay.context", "version": 1, "items": "x" * 100_000})
    with pytest.raises(InvalidRequestError) as refused:
        Context.from_json(text)
    assert len(str(refused.value)) < 600
