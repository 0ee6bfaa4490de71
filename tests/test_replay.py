"""Branches of a session as a tree, and replaying a conversation on another backend."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest

import parlay
from parlay import (
    Context,
    ScriptedBackend,
    Session,
    SessionToolCallingProtocol,
    ToolCall,
    ToolResult,
    UserMessage,
    replay_all,
)
from parlay.backends.scripted import calls, reply_events
from parlay.events import Event
from parlay.replay import PROGRESS_FROM
from parlay.request import ChatRequest

runs: list[tuple[int, int]] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    runs.append((a, b))
    return a + b


def asks_to_add(request: ChatRequest) -> Any:
    """A model that calls add when asked to, and answers from the result it is shown."""
    last = request.messages[-1]
    if last.role == "user" and "add" in last.content:
        return calls(("add", {"a": 2, "b": 3}))
    if last.role == "tool":
        return f"the sum is {last.content}"
    return "said " + last.content


def conversation() -> Session:
    session = Session(ScriptedBackend(asks_to_add), tools=[add], system="sys")
    session.chat("hello").value  # noqa: B018
    session.query(None, "please add").value  # noqa: B018
    session.chat("bye").value  # noqa: B018
    return session


def test_forks_and_replays_form_the_sessions_tree() -> None:
    session = conversation()
    alt = session.fork(at=1, name="alt")
    alt.chat("other").value  # noqa: B018
    deeper = alt.fork()
    replayed = session.replay(name="again")
    tree = session.branches
    assert tree.names == ["main", "alt", "alt.1", "again"]
    assert tree["alt"] is alt and tree["alt.1"] is deeper and tree["again"] is replayed
    assert [tree.forked_at(b) for b in tree] == [None, 1, 2, 0]
    assert str(tree).splitlines()[1] == "  alt: 2 turns on scripted, from turn 1 of main"
    assert deeper.branches.root is session.branch  # the same tree from any branch
    with pytest.raises(KeyError, match="no branch 'nope'; the branches are main, alt"):
        tree["nope"]


def test_a_branch_whose_session_is_gone_leaves_the_tree() -> None:
    session = conversation()
    session.fork(name="dropped")  # no reference kept
    gc.collect()
    kept = session.fork(name="kept")
    assert session.branches.names == ["main", "kept"] and kept.branch.parent is session.branch
    assert [b.name for b in session.branch.children] == ["kept"]  # the node went too


def test_replay_sends_the_user_turns_again_on_another_backend_as_a_branch() -> None:
    session = conversation()
    before = session.ctx
    new = ScriptedBackend(lambda request: "new: " + request.messages[-1].content[:12])
    replayed = session.replay(new)
    assert session.ctx is before  # the old conversation is untouched
    assert replayed.backend is new and replayed.branch.parent is session.branch
    assert [t.start for t in replayed.ctx.turns] == [t.start for t in before.turns]
    assert replayed.ctx.at_turn(0) is before.at_turn(0)  # the system prompt is shared
    answers = [t.outputs[-1].value for t in replayed.ctx.turns]
    assert answers[0] == "new: hello" and answers[2] == "new: bye"
    # the old model's answers are not sent: each turn sees the new model's own
    assert "said hello" not in [m.content for m in new.requests[-1].messages]


def test_replay_runs_the_tools_again_or_reuses_the_recorded_results() -> None:
    session = conversation()
    runs.clear()
    again = session.replay()
    assert runs == [(2, 3)]  # the tool ran again
    assert again.ctx.turns[1].outputs[-1].value == "the sum is 5"
    runs.clear()
    reused = session.replay(results="recorded")
    assert runs == []  # answered from the recorded result, the tool did not run
    assert reused.ctx.turns[1].outputs[-1].value == "the sum is 5"
    assert reused.tools.reused == 1


def test_a_call_the_old_conversation_never_made_runs_the_tool() -> None:
    session = conversation()
    other = ScriptedBackend(
        lambda r: (
            calls(("add", {"a": 7, "b": 7}))
            if r.messages[-1].role == "user" and "add" in r.messages[-1].content
            else "ok"
        )
    )
    runs.clear()
    session.replay(other, results="recorded")
    assert runs == [(7, 7)]


def test_replay_with_a_protocol_mixin_runs_the_calls_through_its_hooks() -> None:
    seen: list[str] = []

    class Approving(SessionToolCallingProtocol, Session):
        def call_tool(self, call: ToolCall) -> ToolResult:
            seen.append(call.name)
            return super().call_tool(call)

    session = conversation()
    replayed = session.replay(session_class=Approving)
    assert isinstance(replayed, Approving) and seen == ["add"]
    assert replayed in list(b.session for b in session.branches)


class SlowBackend:
    """Answers after a pause, counting the streams open at once."""

    name = "slow"
    capabilities = parlay.Capabilities(native_tools=True)

    def __init__(self) -> None:
        self.open = 0
        self.most = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.open += 1
        self.most = max(self.most, self.open)
        try:
            await asyncio.sleep(0.01)
            for event in reply_events("ok " + request.messages[-1].content):
                yield event
        finally:
            self.open -= 1


def test_replay_all_keeps_order_and_bounds_how_many_run_at_once() -> None:
    contexts = [Context([UserMessage(f"q{n}"), UserMessage(f"r{n}")]) for n in range(8)]
    backend = SlowBackend()
    replays = replay_all(contexts, backend, concurrency=3, progress=False)
    assert [r.ctx.turns[0].outputs[-1].value for r in replays] == [f"ok q{n}" for n in range(8)]
    assert backend.most == 3  # never more than asked, and it did use them


def test_replay_all_shows_a_progress_bar_when_there_are_many(
    capsys: pytest.CaptureFixture[str],
) -> None:
    contexts = [Context([UserMessage(f"q{n}")]) for n in range(PROGRESS_FROM)]
    replay_all(contexts, ScriptedBackend(lambda r: "ok"))
    assert "replaying" in capsys.readouterr().err
    replay_all(contexts[:2], ScriptedBackend(lambda r: "ok"))
    assert "replaying" not in capsys.readouterr().err


def test_replay_all_raises_a_failure_or_returns_it_in_place() -> None:
    def fails_on_b(request: ChatRequest) -> str:
        if request.messages[-1].content == "b":
            raise RuntimeError("model down")
        return "ok"

    contexts = [Context([UserMessage(t)]) for t in "abc"]
    with pytest.raises(RuntimeError, match="model down"):
        replay_all(contexts, ScriptedBackend(fails_on_b), progress=False)
    out = replay_all(contexts, ScriptedBackend(fails_on_b), progress=False, return_exceptions=True)
    assert isinstance(out[1], RuntimeError) and out[0].ctx.turns[0].outputs[-1].value == "ok"


def test_replaying_a_context_needs_a_backend() -> None:
    with pytest.raises(ValueError, match="needs backend="):
        replay_all([Context([UserMessage("x")])])
