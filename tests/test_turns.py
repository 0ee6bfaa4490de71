"""Time travel: `ctx.turns`, `ctx.at_turn(n)`, `ctx.diff(other)`, `session.fork(at=n)`."""

from __future__ import annotations

import pytest

from parlay import (
    AssistantMessage,
    Context,
    ContextDiff,
    ScriptedBackend,
    Session,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.backends.scripted import calls


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(request: object) -> str:
    return "said " + request.messages[-1].content  # type: ignore[attr-defined]


def three_turns() -> Session:
    backend = ScriptedBackend([calls(("add", {"a": 1, "b": 2})), "3", "two", "three"])
    session = Session(backend, tools=[add], system="sys")
    session.query(None, "1+2?").value  # noqa: B018
    session.chat("second").value  # noqa: B018
    session.chat("third").value  # noqa: B018
    return session


def test_len_counts_items_and_turns_count_turns() -> None:
    session = three_turns()
    assert len(session.ctx) == 7  # the system prompt, and an input and an output per turn
    assert len(session.ctx.turns) == 3
    assert [t.number for t in session.ctx.turns] == [1, 2, 3]
    assert "len(ctx.turns)" in (Context.__doc__ or "") and "turns" in (
        Context.__len__.__doc__ or ""
    )


def test_a_turn_holds_what_followed_the_user_up_to_the_next_one() -> None:
    call = ToolCall("add", {"a": 1}, id="c1")
    ctx = Context(
        [
            SystemMessage("sys"),
            UserMessage("add"),
            AssistantMessage("", (call,)),
            ToolResult("c1", "add", "1"),  # inserted by hand, then respond(): the same turn
            AssistantMessage("one"),
            UserMessage("next"),
        ]
    )
    first, second = ctx.turns
    assert first.start == UserMessage("add") and len(first.items) == 4
    assert second.items == (UserMessage("next"),)
    assert first.after is second.before and first.before is ctx.at_turn(0)


def test_at_turn_is_the_node_the_conversation_passed_through_not_a_copy() -> None:
    session = three_turns()
    ctx = session.ctx
    for n, turn in enumerate(ctx.turns, 1):
        assert ctx.at_turn(n) is turn.after and ctx.shares(ctx.at_turn(n))
    assert ctx.at_turn(0).messages() == (SystemMessage("sys"),)
    assert ctx.at_turn(3) is ctx and ctx.at_turn(-1) is ctx.at_turn(2)
    with pytest.raises(IndexError, match="turn 4 of a context with 3 turns"):
        ctx.at_turn(4)
    with pytest.raises(IndexError):
        ctx.at_turn(-4)


def test_time_travel_never_runs_a_pending_turn() -> None:
    session = Session(ScriptedBackend(["one", "two"]))
    session.chat("a").value  # noqa: B018
    pending = session.chat("b")
    assert len(session.ctx.turns) == 2 and session.ctx.at_turn(1).last is not pending
    assert not pending.is_started  # counting and travelling did not run the model


def test_negative_indexing_walks_back_without_building_the_list() -> None:
    ctx = Context([UserMessage(str(n)) for n in range(5)])
    assert (
        ctx[-1] == UserMessage("4") and ctx[-5] == UserMessage("0") and ctx[2] == UserMessage("2")
    )
    with pytest.raises(IndexError):
        ctx[-6]


def test_fork_at_a_turn_starts_from_the_context_after_it() -> None:
    session = three_turns()
    fork = session.fork(at=1, name="alt")
    assert fork.ctx is session.ctx.at_turn(1)
    session.backend = ScriptedBackend(echo)  # the fork keeps the backend it was made with
    fork.backend = ScriptedBackend(echo)
    fork.chat("another way").value  # noqa: B018
    assert len(fork.ctx.turns) == 2 and len(session.ctx.turns) == 3
    assert fork.ctx.parent.parent is session.ctx.at_turn(1)


def test_diff_names_the_shared_trunk_and_each_sides_own_turns() -> None:
    session = three_turns()
    fork = session.fork(at=1)
    fork.backend = ScriptedBackend(echo)
    fork.chat("other").value  # noqa: B018
    diff = session.ctx.diff(fork.ctx)
    assert isinstance(diff, ContextDiff) and diff.trunk is session.ctx.at_turn(1)
    assert diff.trunk_turns == 1 and len(diff.left) == 2 and len(diff.right) == 1
    assert [(a is not None, b is not None) for a, b in diff] == [(True, True), (True, False)]
    assert session.ctx.diff(session.ctx).identical


def test_a_turn_answered_differently_is_each_sides_own() -> None:
    base = Context([SystemMessage("sys"), UserMessage("q"), AssistantMessage("a")])
    left = base.insert(UserMessage("same")).insert(AssistantMessage("yes"))
    right = base.insert(UserMessage("same")).insert(AssistantMessage("no"))
    diff = left.diff(right)
    assert diff.trunk is base and diff.shared_items == 4  # the question, then they part
    assert diff.left[0].start == diff.right[0].start == UserMessage("same")


def test_contexts_read_back_from_json_are_compared_item_by_item() -> None:
    session = three_turns()
    loaded = Context.from_json(session.ctx.to_json())
    assert not loaded.shares(session.ctx.at_turn(1))
    assert session.ctx.diff(loaded).identical
    shorter = Context.from_json(session.ctx.at_turn(2).to_json())
    diff = session.ctx.diff(shorter)
    assert diff.trunk_turns == 2 and len(diff.left) == 1 and not diff.right
