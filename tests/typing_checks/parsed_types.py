"""Checked by mypy in tests/test_public_types.py, never run: what a user's type checker sees."""

from typing import Any, assert_type

from pydantic import BaseModel

from parlay import ModelOutputThunk, Repair, SampledThunk, SamplingResult, ScriptedBackend, Session


class Weather(BaseModel):
    city: str


session = Session(ScriptedBackend(['{"city": "Oslo"}']))
assert_type(session.chat("Weather?", format=Weather).parsed, Weather)
assert_type(session.query({"a": 1}, "Weather?", format=Weather).parsed, Weather)
assert_type(session.chat("hi"), ModelOutputThunk[Any])  # no format: as before

# With a strategy, instruct's thunk is a SampledThunk: `.sampling` needs no isinstance.
checked = session.instruct("Weather?", requirements=["Name a city"], strategy=Repair(2))
assert_type(checked, SampledThunk[Any])
assert_type(checked.sampling, SamplingResult)
assert_type(session.instruct("Weather?", format=Weather, strategy=Repair(2)).parsed, Weather)
assert_type(session.instruct("Weather?"), ModelOutputThunk[Any])  # no strategy: as before
