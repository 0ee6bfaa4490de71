"""Tool-call arguments a client or an upstream sends: never an exception, never slow
(issue: nothing a client sends can crash or hang the proxy)."""

from __future__ import annotations

import time

import pytest

from parlay.wire.arguments import parse_arguments

HOSTILE = {
    "a number of 5,000 digits": '{"a": ' + "1" * 5000 + "}",
    "100,000 open brackets": "[" * 100_000,
    "10,000 open braces": "{" * 10_000,
    "a cut string of 200,000 characters": '{"a": "' + "x" * 200_000,
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_arguments_give_a_note_not_an_exception_and_fast(text: str) -> None:
    started = time.perf_counter()
    arguments, note = parse_arguments(text)
    assert time.perf_counter() - started < 0.5  # the repair took 1 s on 10,000 braces
    assert isinstance(arguments, dict) and note


def test_short_broken_arguments_are_still_repaired() -> None:
    assert parse_arguments('{"city": "Paris",}') == (
        {"city": "Paris"},
        'repaired arguments JSON: \'{"city": "Paris",}\'',
    )
