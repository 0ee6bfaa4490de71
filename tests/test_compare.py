"""Branches side by side: `parlay.compare`, `ContextDiff` and `BranchTree` in a notebook."""

from __future__ import annotations

from typing import Any

from syrupy.assertion import SnapshotAssertion

from parlay import (
    Comparison,
    Context,
    Diagnostics,
    Finish,
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
    compare,
)
from parlay.diagnostics import RetryRecord


def output(text: str, *, usage: Usage | None = None, ms: float | None = None, **kw: Any) -> Any:
    steps = kw.pop("steps", ())
    events: list[Any] = [TextDelta(text)] if text else []
    events += [ToolCallEnd(c) for c in kw.pop("calls", ())]
    events.append(Finish(kw.pop("reason", "stop"), usage, **kw))
    thunk = ModelOutputThunk.restored(events, steps)
    thunk.duration_ms = ms
    return thunk


def branches() -> dict[str, Context]:
    trunk = Context([SystemMessage("sys"), UserMessage("hi"), output("hello")])
    call = ToolCall("lookup", {"q": "<script>alert(1)</script>"}, id="c1")
    steps = (
        output("", calls=(call,), reason="tool_calls").message,
        ToolResult("c1", "lookup", "<img src=x onerror=alert(2)>"),
    )
    retried = Diagnostics(retries=(RetryRecord("unknown_tool", "<b>bad</b>"),))
    left = trunk.insert(UserMessage("weather?")).insert(
        output(
            "sunny <i>today</i>", usage=Usage(12, 3), ms=250.0, steps=steps, model="/m/qwen.gguf"
        )
    )
    right = trunk.insert(UserMessage("weather?")).insert(
        output("rain", usage=Usage(10, 1), ms=90.0, diagnostics=retried)
    )
    return {"<main>": left, "replay": right}


def test_the_comparison_shows_each_branchs_turns_after_the_trunk() -> None:
    comparison = Comparison.of(branches())
    assert len(comparison.trunk.turns) == 1
    (row,) = comparison.rows
    assert [t.start for t in row] == [UserMessage("weather?")] * 2
    left, right = (figures[0] for figures in comparison.figures().values())
    assert (left.prompt_tokens, left.completion_tokens, left.duration_ms) == (12, 3, 250.0)
    assert right.retries == ("unknown_tool",) and left.model == "/m/qwen.gguf"


def test_the_comparison_escapes_everything_a_model_or_user_wrote(
    snapshot: SnapshotAssertion,
) -> None:
    html = Comparison.of(branches())._repr_html_()
    for raw in ("<script>", "<img", "<i>today", "<b>bad", "<main>"):
        assert raw not in html
    assert "&lt;script&gt;" in html and "&lt;main&gt;" in html
    assert "12 + 3 tokens" in html and "250 ms" in html and "1 retries (unknown_tool)" in html
    assert html == snapshot


def test_compare_takes_sessions_contexts_and_a_branch_tree() -> None:
    session = Session(ScriptedBackend(lambda r: "a " + r.messages[-1].content), system="sys")
    session.chat("one").value  # noqa: B018
    fork = session.fork(at=0, name="fresh")
    fork.chat("two").value  # noqa: B018
    assert list(compare(session, fork).contexts) == ["main", "fresh"]
    assert list(compare(session.ctx, fork.ctx).contexts) == ["1", "2"]
    assert list(compare(session.branches).contexts) == ["main", "fresh"]
    assert list(compare(old=session, new=fork).contexts) == ["old", "new"]
    assert session.branches.compare().trunk is session.ctx.at_turn(0)


def test_a_diff_and_a_tree_show_in_a_notebook() -> None:
    session = Session(ScriptedBackend(lambda r: "<u>x</u>"), system="sys")
    session.chat("one").value  # noqa: B018
    fork = session.fork(at=0, name="<fork>")
    fork.chat("two").value  # noqa: B018
    html = session.ctx.diff(fork.ctx)._repr_html_()
    assert 'class="parlay"' in html and "<u>" not in html and "turn 1" in html
    tree = session.branches._repr_html_()
    assert "&lt;fork&gt;" in tree and "<fork>" not in tree
