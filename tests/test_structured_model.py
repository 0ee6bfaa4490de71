"""Structured output with tools on the embedded model (issue: format= lost under tools)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import parlay


class Answer(BaseModel):
    city: str
    temperature: int


def get_weather(city: str) -> dict:
    """Current weather in a city.

    Args:
        city: The city name.
    """
    return {"city": city, "temperature": 21}


@pytest.mark.model
async def test_the_embedded_model_answers_in_the_callers_schema_with_tools_offered() -> None:
    session = parlay.start_session(tools=[get_weather])
    answer = session.query({"city": "Oslo"}, "What is the weather like there?", format=Answer)
    await asyncio.wait_for(answer, timeout=240)
    # Whatever the small model chose to say, the final answer fits the schema.
    assert isinstance(answer.parsed, Answer)
    assert not answer.tools
