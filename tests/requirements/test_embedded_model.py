"""A checked instruction on the embedded model (SmolLM2 through the engine): protocol
facts only, never the model's wording."""

from __future__ import annotations

import pytest

from parlay import GenerationOptions, Session
from parlay.backends.openai import OpenAIBackend
from parlay.engine.backend import PromptedBackend
from parlay.requirements import JudgedBy, Repair, req


@pytest.mark.model
def test_a_checked_instruction_on_the_embedded_model_keeps_its_attempts(
    llama_backend: OpenAIBackend,
) -> None:
    options = GenerationOptions(temperature=0, max_tokens=40)
    session = Session(PromptedBackend(llama_backend), options=options)
    within = req("At most 3 words", lambda text: len(text.split()) <= 3)
    reply = session.instruct(
        "Name a colour.", requirements=["Name a colour", within], strategy=Repair(2)
    )
    result = reply.sampling
    assert 1 <= len(result.attempts) <= 2
    assert reply.value == result.chosen.value
    for attempt in result.attempts:
        assert [v.by for v in attempt.validations] == [JudgedBy.MODEL, JudgedBy.CODE]
        assert attempt.validations[0].usage is not None
    assert reply.success == result.chosen.passed
    assert session.ctx.messages()[-1].content == reply.value
    assert session.branches.names[0] == "main" and len(session.branches) == 1 + len(result.attempts)
