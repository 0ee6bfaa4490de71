"""Bounded generation: token budgets and the repetition guard (issue: runaway generation)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parlay
from parlay.backends.base import Capabilities
from parlay.backends.bounds import (
    ATTEMPT_MAX_TOKENS,
    EMBEDDED_MAX_TOKENS,
    RepetitionGuard,
    RepetitionLimit,
    guarded,
)
from parlay.backends.local import LocalBackend
from parlay.backends.prompted import PromptedBackend
from parlay.context import UserMessage
from parlay.errors import ConfigurationError
from parlay.events import Event, Finish, ScoredTextDelta, TextDelta, TokenChoice
from parlay.request import ChatRequest, GenerationOptions, ToolSpec

LOOP = '{"final": {"content": "' + "The answer is 5555. " * 40


def shown(text: str, step: int, limit: RepetitionLimit | None = None) -> tuple[str, str | None]:
    guard = RepetitionGuard(limit)
    out = "".join(guard.feed(text[i : i + step]) for i in range(0, len(text), step))
    return out + guard.flush(), guard.tripped


@pytest.mark.parametrize("step", [1, 3, 4, 17, 10_000])
def test_a_sentence_repeated_in_a_loop_is_shown_once_and_stopped(step: int) -> None:
    text, tripped = shown(LOOP, step)
    assert tripped == "The answer is 5555."
    assert text == '{"final": {"content": "The answer is 5555.'


def test_a_cycle_of_two_sentences_is_a_loop() -> None:
    text, tripped = shown("Ada is here. Bo went out. " * 6 + "The end.", 5)
    assert tripped == "Ada is here. Bo went out."
    assert text == "Ada is here. Bo went out."


def test_lines_repeated_in_a_loop_trip_the_guard() -> None:
    _, tripped = shown("1. intro\n" + "| 2026-11-20 | shipped |\n" * 9, 2)
    assert tripped == "| 2026-11-20 | shipped |"


@pytest.mark.parametrize(
    "text",
    [
        "- [ ] todo\n" * 10,  # short identical items are a list, not a loop
        "Yes. Yes. OK. Fine. Done.\nA\nA\nB",
        "The cat sat. The dog ran. The cat is here. " * 3,  # repeats, but not in a row
        "return value + 1\n" * 3 + "}\n",  # three in a row is under the limit
    ],
)
def test_text_that_is_no_loop_is_shown_as_written(text: str) -> None:
    for step in (1, 2, 9, 10_000):
        assert shown(text, step) == (text, None)


sentences = st.sampled_from(["Hi there. ", "Hi there. ", "It is 5. ", "ok\n", "\n", "x. "])


@settings(max_examples=150, deadline=None)
@given(st.lists(sentences, max_size=40), st.integers(min_value=1, max_value=12))
def test_every_split_shows_the_same_text(parts: list[str], step: int) -> None:
    text = "".join(parts)
    whole = shown(text, max(len(text), 1))
    assert shown(text, step) == whole
    if whole[1] is None:
        assert whole[0] == text  # nothing is lost when there is no loop


def test_the_guard_is_linear_on_a_long_reply_without_unit_ends() -> None:
    guard = RepetitionGuard()
    text = "ab" * 500_000
    out = "".join(guard.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    assert out + guard.flush() == text


def test_a_repetition_limit_that_cannot_work_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="repeats >= 2"):
        RepetitionLimit(repeats=1)


async def test_guarded_closes_the_inner_stream_and_says_what_repeated() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[Event]:
        try:
            while True:
                yield TextDelta("Again and again. ")
        finally:
            closed.set()

    events = [e async for e in guarded(endless(), RepetitionLimit())]
    assert closed.is_set()
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "length"
    assert finish.diagnostics is not None
    assert finish.diagnostics.repetition == "Again and again."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Again and again."


async def test_guarded_keeps_every_token_score_in_order() -> None:
    tokens = [TokenChoice(t, -0.1) for t in ["Hi", " there", ".", " Hi", " there", ".", " Bye"]]

    async def scored() -> AsyncIterator[Event]:
        for token in tokens:
            yield ScoredTextDelta(token.token, tokens=(token,))
        yield Finish("stop")

    events = [e async for e in guarded(scored(), RepetitionLimit())]
    texts = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(e.text for e in texts) == "Hi there. Hi there. Bye"
    kept = [t for e in texts if isinstance(e, ScoredTextDelta) for t in e.tokens]
    assert kept == tokens
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"


class Recording:
    """A plain-chat backend that records its requests and answers with a loop."""

    name = "recording"
    capabilities = Capabilities(native_tools=False, json_schema=False)

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        for _ in range(200):
            yield TextDelta("I will check. ")
        yield Finish("stop")


def ask(options: GenerationOptions = GenerationOptions()) -> ChatRequest:  # noqa: B008
    return ChatRequest((UserMessage("hi"),), options=options)


async def test_the_embedded_model_has_a_default_token_budget_and_a_callers_wins() -> None:
    local = LocalBackend("unused.gguf")
    inner = Recording()
    local._backend = inner  # type: ignore[assignment]  # the started server, stood in for
    [e async for e in local.stream(ask())]
    [e async for e in local.stream(ask(GenerationOptions(max_tokens=7)))]
    assert [r.options.max_tokens for r in inner.requests] == [EMBEDDED_MAX_TOKENS, 7]


async def test_an_engine_attempt_has_a_token_budget_and_stops_a_loop() -> None:
    inner = Recording()
    engine = PromptedBackend(inner)
    tool = ToolSpec("lookup", "Look a thing up.", {"type": "object", "properties": {}})
    request = ChatRequest((UserMessage("hi"),), tools=(tool,))
    events = [e async for e in engine.stream(request)]
    assert inner.requests[0].options.max_tokens == ATTEMPT_MAX_TOKENS
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.diagnostics is not None
    assert finish.diagnostics.repetition == "I will check."
    assert finish.reason == "length"
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.count("I will check.") == 1


@pytest.mark.model
async def test_query_after_a_tool_result_ends_instead_of_repeating_the_answer() -> None:
    """docs/quickstart.md's `query` never finished: "The answer is 5555." 180 times."""

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    session = parlay.start_session(tools=[add])
    answer = session.query({"a": 1234, "b": 4321}, "What is a + b?")
    await asyncio.wait_for(answer, timeout=240)
    text = answer.value
    assert answer.finish_reason in ("stop", "length")
    diagnostics = answer.diagnostics
    assert diagnostics is not None
    if answer.finish_reason == "length":
        assert diagnostics.repetition is not None
    for sentence in {s.strip() for s in text.split(". ") if s.strip()}:
        assert text.count(sentence) < 4, text
