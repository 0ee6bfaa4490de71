"""Images in a session's context: `session.chat([text, Image])`, kept through save/load,
and nothing that reads a context (the log, display, compare, diff) trips on one."""

from __future__ import annotations

from pathlib import Path

import pytest

from parlay import (
    ChatRequest,
    Context,
    Image,
    ScriptedBackend,
    Session,
    Store,
    ToolCall,
    ToolResult,
    UserMessage,
    compare,
)

PNG = Image.from_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png")
REMOTE = Image(url="https://example.com/cat.png")


def seen(request: ChatRequest) -> str:
    images = [i for m in request.messages for i in getattr(m, "images", ())]
    return f"{len(images)} image(s)"


def test_chat_takes_text_and_images_in_one_list() -> None:
    backend = ScriptedBackend(seen)
    session = Session(backend)
    assert session.chat(["What is in this picture?", PNG]).value == "1 image(s)"
    assert backend.requests[0].messages[-1] == UserMessage("What is in this picture?", (PNG,))
    assert session.chat("and now?").value == "1 image(s)"  # kept in the history


def test_chat_refuses_a_part_that_is_neither_text_nor_an_image() -> None:
    with pytest.raises(TypeError, match=r"str and parlay\.Image"):
        Session(ScriptedBackend(["x"])).chat(["look", b"raw bytes"])  # type: ignore[list-item]


def test_images_round_trip_through_save_and_load(tmp_path: Path) -> None:
    session = Session(ScriptedBackend(["A cat."]))
    session.chat(["What is this?", PNG, REMOTE]).value  # noqa: B018
    session.ctx = session.ctx.insert(ToolCall("view", {}, "c1"))
    session.ctx = session.ctx.insert(ToolResult("c1", "view", "shot", images=(PNG,)))
    session.save(tmp_path / "ctx.json")
    loaded = Session.load(tmp_path / "ctx.json", ScriptedBackend([])).ctx
    assert loaded.messages() == session.ctx.messages()
    assert Context.from_json(Context([UserMessage("plain")]).to_json()) is not None


def test_a_document_without_images_is_written_as_before() -> None:
    assert '"images"' not in Context([UserMessage("hi"), ToolResult("c", "t", "ok")]).to_json()


def test_the_log_display_compare_and_diff_read_a_context_with_images(tmp_path: Path) -> None:
    store = Store(tmp_path / "log.db")
    session = Session(ScriptedBackend(["A cat.", "A dog."]), log=store)
    session.chat(["What is this?", PNG]).value  # noqa: B018
    other = session.fork(at=0)
    other.chat(["And this?", REMOTE]).value  # noqa: B018
    assert store.context(session.log.session_id).messages()[0].content == "What is this?"
    html = session.ctx._repr_html_()
    assert "What is this?" in html
    assert compare(one=session, two=other) is not None
    assert session.ctx.diff(other.ctx) is not None
