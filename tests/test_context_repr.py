"""A context says what it counts: `len(ctx)` is items, `fork(at=n)` counts turns."""

from parlay import Context, ScriptedBackend, Session


def test_a_contexts_repr_says_items_and_turns() -> None:
    session = Session(ScriptedBackend(["a", "b"]), system="Be brief.")
    session.chat("hi").value  # noqa: B018
    session.chat("again").value  # noqa: B018
    assert len(session.ctx) == 5 and len(session.ctx.turns) == 2
    assert repr(session.ctx) == "<Context 5 items, 2 turns>"
    assert repr(session.ctx.at_turn(1)) == "<Context 3 items, 1 turn>"
    assert repr(Context()) == "<Context 0 items, 0 turns>"
