"""What the server turns into a grammar: the action schema of every format and choice, as
a snapshot (a change in what constrains the model is a reviewed diff), and the replies
it admits and refuses."""

from __future__ import annotations

import json

import jsonschema
import pytest

from parlay.context import UserMessage
from parlay.engine.contract.constrain import action_schema, final_schema
from parlay.engine.contract.pieces import FORMATS
from parlay.engine.judging import words_format
from parlay.engine.policy import TurnPolicy
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS

CHOICES = {
    "auto": ToolChoice("auto"),
    "required": ToolChoice("required"),
    "named": ToolChoice("tool", "add"),
}


@pytest.mark.parametrize("parallel", [False, True], ids=["one", "several"])
@pytest.mark.parametrize("choice", list(CHOICES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_action_grammar(snapshot, fmt: str, choice: str, parallel: bool) -> None:
    schema = action_schema(TOOLS, TurnPolicy.of_choice(CHOICES[choice]), fmt, parallel=parallel)
    assert json.dumps(schema, indent=1) == snapshot


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_answer_is_outside_every_answer_grammar(fmt: str) -> None:
    schema = action_schema(TOOLS, TurnPolicy.of_choice(ToolChoice("auto")), fmt)
    assert schema is not None
    answer = {"type": "final", "content": ""} if fmt == "typed" else {"final": {"content": ""}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer, final_schema(fmt))
    if fmt == "typed":
        answer["content"] = "Paris."
    else:
        answer["final"]["content"] = "Paris."  # type: ignore[index]
    jsonschema.validate(answer, schema)
    jsonschema.validate(answer, final_schema(fmt))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_answer_only_grammar_wants_a_word(fmt: str) -> None:
    request = ChatRequest((UserMessage("hi"),), TOOLS)
    schema = words_format(request, fmt).schema
    empty, words = ({"type": "final", "content": t} for t in ("", "I cannot say."))
    if fmt != "typed":
        empty, words = ({"final": {"content": t}} for t in ("", "I cannot say."))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(empty, schema)
    jsonschema.validate(words, schema)
