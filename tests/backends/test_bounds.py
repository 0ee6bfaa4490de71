"""Bounded generation: token budgets and the repetition guard (issue: runaway generation)."""

from __future__ import annotations

import asyncio
import time
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
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.errors import ConfigurationError
from parlay.events import Event, Finish, ScoredTextDelta, TextDelta, TokenChoice, Usage
from parlay.request import ChatRequest, GenerationOptions, ToolChoice, ToolSpec

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
    text = "".join(str(i * 7919 % 100_003) for i in range(200_000))  # ~1M, never repeats
    started = time.perf_counter()
    out = "".join(guard.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    assert out + guard.flush() == text
    assert time.perf_counter() - started < 10  # ~0.4 s; a quadratic guard takes hours


def test_a_repetition_limit_that_cannot_work_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="repeats >= 2"):
        RepetitionLimit(repeats=1)
    with pytest.raises(ConfigurationError, match="line_chars >= 32"):
        RepetitionLimit(line_chars=60, line_period=50)


# SmolLM2 on simple_python_166: three attempts of 1024 tokens each, 125 s, in one line.
ARGUMENT_LOOP = '{"action": {"tool": "lawyer.find_nearby", "args": {"specialty": ["Civil", ' + (
    '"Divorce", ' * 300
)


@pytest.mark.parametrize("step", [1, 4, 7, 64, 100_000])
def test_a_loop_inside_one_line_is_stopped_after_line_chars(step: int) -> None:
    text, tripped = shown(ARGUMENT_LOOP, step)
    assert tripped is not None and sorted(tripped) == sorted('"Divorce", ')
    assert ARGUMENT_LOOP.startswith(text)
    loop_start = ARGUMENT_LOOP.index('"Divorce"')
    assert 300 <= len(text) - loop_start < 300 + 16  # seen at the next look after 300


def test_the_piece_of_a_line_loop_is_its_shortest_period() -> None:
    _, tripped = shown("team2: " + "Basketball." * 60, 5)
    assert tripped is not None and len(tripped) == len("Basketball.")
    _, spaces = shown('{"a": 1,' + " " * 400, 3)
    assert spaces == " "


@pytest.mark.parametrize(
    "text",
    [
        "0, " * 90,  # a long run of one short piece, under 300 characters
        "=" * 80 + "\n" + "=" * 80,
        ("[0, 0, 0, 0, 0, 0, 0, 0],\n[1, 1, 1, 1, 1, 1, 1, 1],\n") * 2,
        "".join(f"item {i}, " for i in range(300)),  # alike, never the same
    ],
)
def test_a_line_that_repeats_less_than_line_chars_is_no_loop(text: str) -> None:
    for step in (1, 5, 10_000):
        assert shown(text, step) == (text, None)


def test_lines_are_not_read_for_loops_when_line_chars_is_none() -> None:
    limit = RepetitionLimit(line_chars=None)
    assert shown(ARGUMENT_LOOP, 9, limit) == (ARGUMENT_LOOP, None)


pieces = st.sampled_from(['"Divorce", ', "ab", " ", "x\n", "Civil, ", "0"])


@settings(max_examples=150, deadline=None)
@given(st.lists(pieces, max_size=120), st.integers(min_value=1, max_value=40))
def test_a_line_loop_stops_at_the_same_place_however_the_reply_is_split(
    parts: list[str], step: int
) -> None:
    text = "".join(parts)
    assert shown(text, step) == shown(text, max(len(text), 1))


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
    assert finish.diagnostics.notes == (
        "stopped a reply in a loop: it repeated 'Again and again.' 4 times",
    )


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


class LoopingArgument(Recording):
    """Writes a call whose argument list repeats one item, in one line, without end."""

    sent = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        yield TextDelta('{"action": {"tool": "find", "args": {"kinds": [')
        for _ in range(2000):
            self.sent += 1
            yield TextDelta('"Divorce", ')
        yield Finish("stop")


async def test_an_engine_attempt_looping_inside_an_argument_is_stopped_early() -> None:
    inner = LoopingArgument()
    engine = PromptedBackend(inner, max_retries=1)
    kinds = {"type": "array", "items": {"type": "string"}}
    tool = ToolSpec("find", "Find things.", {"type": "object", "properties": {"kinds": kinds}})
    events = [e async for e in engine.stream(ChatRequest((UserMessage("hi"),), tools=(tool,)))]
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.diagnostics is not None
    assert finish.diagnostics.repetition is not None
    assert sorted(finish.diagnostics.repetition) == sorted('"Divorce", ')
    assert any("stopped a reply in a loop" in note for note in finish.diagnostics.notes)
    assert inner.sent <= 30 * len(inner.requests)  # stopped ~28 items in, not 2000


class LoopsThenAnswers(Recording):
    """Loops in words in its first reply (the guard stops it: no count from the server),
    then calls with a count."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        if len(self.requests) == 1:
            for _ in range(200):
                yield TextDelta("I will check. ")
            yield Finish("stop", Usage(900, 400))
            return
        yield TextDelta('{"action": {"tool": "find", "args": {"kinds": ["Civil"]}}}')
        yield Finish("stop", Usage(120, 4))


async def test_a_turn_with_an_uncounted_attempt_reports_no_usage_rather_than_a_part() -> None:
    inner = LoopsThenAnswers()
    engine = PromptedBackend(inner, max_retries=1)
    kinds = {"type": "array", "items": {"type": "string"}}
    tool = ToolSpec("find", "Find things.", {"type": "object", "properties": {"kinds": kinds}})
    forced = ChatRequest((UserMessage("hi"),), tools=(tool,), tool_choice=ToolChoice("required"))
    events = [e async for e in engine.stream(forced)]
    finish = events[-1]
    assert isinstance(finish, Finish)
    assert len(inner.requests) == 2  # the loop was stopped, then the engine asked again
    assert finish.usage is None  # not Usage(120, 4), which would pass for the whole turn


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
