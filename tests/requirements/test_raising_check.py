"""A check that raises is a bug in the check: the turn ends with its error."""

import pytest

from parlay import RejectionSampling, ScriptedBackend, Session, req


def test_a_check_that_raises_ends_the_turn_with_its_error_and_leaves_the_context() -> None:
    def broken(text: str) -> bool:
        raise KeyError("a bug in the check")

    backend = ScriptedBackend(["one", "two", "three"])
    session = Session(backend)
    before = session.ctx
    reply = session.instruct(
        "Say a number.", requirements=[req("A number", broken)], strategy=RejectionSampling(3)
    )
    with pytest.raises(KeyError, match="a bug in the check"):
        reply.value  # noqa: B018
    assert session.ctx is before
    assert len(backend.requests) == 1  # not sent round the budget
