"""How much the first reply leaned to answering in words, read at the token that wrote
its kind (`Diagnostics.answer_share`)."""

from __future__ import annotations

import pytest

from parlay.backends.prompted import PromptedBackend
from parlay.contract.leaning import answer_share
from parlay.events import TokenChoice

from .test_forced import FINAL, ScoredModel, ask, lp, run, tokens


def test_the_share_of_answering_among_answering_and_calling() -> None:
    reply = tokens('{"', ("final", [("final", 0.5), ("tool", 0.3), ("Hello", 0.2)]), '": {}}')
    # "Hello" is neither (the grammar does not admit it): 0.5 of 0.8.
    assert answer_share(reply, "json") == pytest.approx(0.625)


def test_a_token_that_writes_the_brace_and_the_word_together() -> None:
    reply = tokens(('{"tool', [('{"tool', 0.9), ('{"final', 0.1), ("{", 0.05)]), '": "x"}')
    # "{" could go on to either: it counts for neither.
    assert answer_share(reply, "json") == pytest.approx(0.1)


def test_the_typed_format_reads_the_kind_from_its_value() -> None:
    reply = tokens('{"type": "', ("tool", [("tool", 0.7), ("final", 0.3)]), '_call", "name": "x"}')
    assert answer_share(reply, "typed") == pytest.approx(0.3)


def test_nothing_to_read_is_none() -> None:
    plain = [TokenChoice('{"', 0.0), TokenChoice("final", lp(0.9))]  # no alternatives
    assert answer_share(plain, "json") is None
    assert answer_share(tokens("Hello there"), "json") is None
    assert answer_share(tokens('{"', ("final", [("final", 1.0)])), "fenced") is None
    assert answer_share([], "json") is None


async def test_the_first_replys_lean_is_in_the_diagnostics() -> None:
    first = tokens('{"', ("final", [("final", 0.6), ("tool", 0.4)]), '": {"content": "Hi"}}')
    model = ScoredModel(first, FINAL)
    _, finish = await run(PromptedBackend(model, action_format="json"), ask("hello"))
    assert finish.diagnostics is not None
    assert finish.diagnostics.answer_share == pytest.approx(0.6)
