"""Checked by mypy in tests/test_public_types.py, never run: what a user's type checker sees."""

from typing import Any, assert_type

from pydantic import BaseModel

from parlay import ModelOutputThunk, ScriptedBackend, Session


class Weather(BaseModel):
    city: str


session = Session(ScriptedBackend(['{"city": "Oslo"}']))
assert_type(session.chat("Weather?", format=Weather).parsed, Weather)
assert_type(session.query({"a": 1}, "Weather?", format=Weather).parsed, Weather)
assert_type(session.chat("hi"), ModelOutputThunk[Any])  # no format: as before
