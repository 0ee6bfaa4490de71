"""A reply that answers and also copies parlay's instructions shows only the answer; a
restated request cut by the token limit is dropped like a whole one (issue:
generalisation, item 5). Qwen in the typed format, after tool results, opened its reply
with "The request:" and the user's message until the limit cut it mid-word (three of 56
continuations of the turn-after-a-result benchmark's tune half, stop 26c)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parlay.backends.scripted import ScriptedBackend
from parlay.context import AssistantMessage, ToolCall, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks.echo_trim import EchoTrim
from parlay.engine.checks.own_words import continuation_words
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.events import Event, Finish
from parlay.request import ChatRequest

from .conftest import TOOLS
from .test_continuation_echo import AFTER_RESULT, LAST_LINE, PLAIN
from .test_own_words import GRAMMAR, run

REQUEST = (
    "Can you help me with a few things? First, add 2 and 3 for me. Second, I'm trying "
    "to remember the rating of the chess player Magnus Carlsen."
)
LONG_REQUEST = (
    UserMessage(REQUEST),
    AssistantMessage("", (ToolCall("add", {"a": 2, "b": 3}, "c1"),)),
    ToolResult("c1", "add", output="5"),
)


def trim_for(messages: tuple[object, ...] = AFTER_RESULT) -> EchoTrim:
    options = ContractOptions()
    request = ChatRequest(messages, tools=TOOLS)  # type: ignore[arg-type]
    rendered = render_contract(request, options).messages
    return EchoTrim(continuation_words(request.messages, rendered, options))


def trimmed(text: str, cuts: list[int], messages: tuple[object, ...] = AFTER_RESULT) -> str:
    trim = trim_for(messages)
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(text)), len(text)]
    shown = [trim.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    return "".join(shown) + trim.flush()


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (f"2 + 3 is 5. {LAST_LINE}", "2 + 3 is 5."),
        ("The result is 5. Otherwise answer the user with this result.", "The result is 5."),
        ("Decide the next step: 2 + 3 is 5.", "2 + 3 is 5."),
        (f"2 + 3 is 5.\n{LAST_LINE}\n", "2 + 3 is 5.\n"),
        # Words of the user's only, after a dropped clause, go with it.
        ("2 + 3 is 5. Decide the next step. What is 2 + 3?", "2 + 3 is 5."),
    ],
)
@pytest.mark.parametrize("chunk_size", [1, 3, 0])
async def test_an_answer_then_an_instruction_shows_the_answer_only(
    reply: str, answer: str, chunk_size: int
) -> None:
    inner = ScriptedBackend([reply], capabilities=PLAIN, chunk_size=chunk_size)
    text, finish = await run(PromptedBackend(inner), ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == answer
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("echo_filter",)
    assert any("repeating the continuation" in n for n in finish.diagnostics.notes)


@pytest.mark.parametrize("action_format", ["typed", "json"])
async def test_the_answer_of_an_action_under_a_grammar_is_trimmed_too(action_format: str) -> None:
    content = f"2 + 3 is 5. {LAST_LINE}"
    reply = {
        "typed": json.dumps({"type": "final", "content": content}),
        "json": json.dumps({"final": {"content": content}}),
    }[action_format]
    inner = ScriptedBackend([reply], capabilities=GRAMMAR, chunk_size=3)
    backend = PromptedBackend(inner, action_format=action_format)
    text, finish = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None and finish.diagnostics.rules == ("echo_filter",)


async def test_with_the_echo_filter_off_nothing_is_taken_out() -> None:
    reply = f"2 + 3 is 5. {LAST_LINE}"
    inner = ScriptedBackend([reply], capabilities=PLAIN, chunk_size=3)
    backend = PromptedBackend(inner, rules_off={"echo_filter"})
    text, _ = await run(backend, ChatRequest(AFTER_RESULT, tools=TOOLS))
    assert text == reply


class StopsAtTheLimit(ScriptedBackend):
    """Its first reply ends as a reply cut by the token limit does."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        first = not self.requests
        async for event in super().stream(request):
            if first and isinstance(event, Finish):
                event = Finish("length", event.usage, model=event.model)
            yield event


@pytest.mark.parametrize("cut_at", [90, 91, 140])
async def test_a_restated_request_cut_by_the_token_limit_is_dropped(cut_at: int) -> None:
    reply = f"The request: {REQUEST}"[:cut_at]  # cut inside a word, or between two
    inner = StopsAtTheLimit([reply, "2 + 3 is 5."], capabilities=PLAIN, chunk_size=3)
    text, finish = await run(PromptedBackend(inner), ChatRequest(LONG_REQUEST, tools=TOOLS))
    assert text == "2 + 3 is 5."
    assert finish.diagnostics is not None
    assert finish.diagnostics.rules == ("echo_filter", "words_after_drop")


async def test_an_answer_cut_by_the_token_limit_is_not_taken_for_a_restatement() -> None:
    reply = "2 + 3 is 5, and the rating of Magnus Carl"
    inner = StopsAtTheLimit([reply], capabilities=PLAIN, chunk_size=3)
    text, _ = await run(PromptedBackend(inner), ChatRequest(LONG_REQUEST, tools=TOOLS))
    assert text == reply


def test_the_trim_is_idle_where_no_tool_result_ends_the_conversation() -> None:
    trim = trim_for(AFTER_RESULT[:1])
    assert not trim.active
    assert trim.feed(LAST_LINE) == LAST_LINE and trim.flush() == ""


REPLIES = [
    f"2 + 3 is 5. {LAST_LINE}",
    f"Decide the next step: {LAST_LINE} 2 + 3 is 5.\n\nDone.",
    "The request: What is 2 + 3? The answer is 5. Otherwise answer the user with this result.",
    "What is 2 + 3? It is 5.",
    "",
    # Generated (a harness of the trim): the word-set trim showed "I'm" or "I'm\n."
    # depending on the chunking.
    "The request:\n" + LAST_LINE.replace(": ", ":\n").replace("; ", ";\n") + "\nI'm\n. next ,",
]


@settings(max_examples=300, deadline=None)
@given(
    reply=st.sampled_from(REPLIES),
    cuts=st.lists(st.integers(min_value=0, max_value=260), max_size=30),
)
def test_the_trim_shows_the_same_text_however_the_reply_is_chunked(
    reply: str, cuts: list[int]
) -> None:
    assert trimmed(reply, cuts) == trimmed(reply, [])


def test_what_the_trim_shows_of_each_reply() -> None:
    assert [trimmed(reply, []) for reply in REPLIES] == [
        "2 + 3 is 5.",
        "2 + 3 is 5.\n\nDone.",
        "The request: What is 2 + 3? The answer is 5.",
        "What is 2 + 3? It is 5.",
        "",
        "I'm\n. next ,",
    ]
