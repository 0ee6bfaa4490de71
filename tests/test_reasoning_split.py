"""`<think>` split out of a plain-chat model's reply: the same for every chunking, linear,
never raising, and before the engine's parser (a call inside reasoning is no call)."""

from __future__ import annotations

import itertools
import time

from hypothesis import given
from hypothesis import strategies as st

from parlay import ChatRequest, PromptedBackend, ScriptedBackend, Session, ToolSpec, UserMessage
from parlay.events import Event, ReasoningDelta, TextDelta
from parlay.reasoning import ThinkSplitter
from parlay.reply import agather


def split(chunks: list[str]) -> tuple[str, str]:
    """(reasoning, answer) of a reply streamed as `chunks`."""
    splitter = ThinkSplitter()
    events: list[Event] = []
    for chunk in chunks:
        events += splitter.feed(TextDelta(chunk))
    events += splitter.finish()
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    return thought, answer


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


REPLIES = st.one_of(
    st.text(alphabet="<>/thinkTHINK \n ab", max_size=40),
    st.builds(
        lambda pad, thought, tail: f"{pad}<think>{thought}</think>{tail}",
        st.sampled_from(["", "\n", "  "]),
        st.text(alphabet="<>/think ab\n", max_size=20),
        st.text(alphabet="<>/think ab\n", max_size=20),
    ),
)


@given(REPLIES, st.lists(st.integers(min_value=0, max_value=80), max_size=12))
def test_any_chunking_gives_the_same_split(reply: str, cuts: list[int]) -> None:
    assert split(chunked(reply, cuts)) == split([reply])


@given(REPLIES)
def test_a_split_loses_no_text_outside_the_tags(reply: str) -> None:
    thought, answer = split([reply])
    if reply.lstrip().startswith("<think>"):
        assert answer.strip() in reply and thought in reply
    else:
        assert (thought, answer) == ("", reply)


def test_a_tag_split_across_chunks_is_still_reasoning() -> None:
    chunks = ["<th", "ink>plan", " it</thi", "nk>\n\nThe answer"]
    assert split(chunks) == ("plan it", "The answer")


def test_a_think_block_never_closed_is_reasoning_to_the_end() -> None:
    assert split(["<think>still thinking when the", " tokens ran out"]) == (
        "still thinking when the tokens ran out",
        "",
    )


def test_think_later_in_an_answer_is_answer_text() -> None:
    reply = "Use the <think> tag like this: <think>x</think>"
    assert split([reply]) == ("", reply)


def test_splitting_is_linear_in_the_reply() -> None:
    # An unclosed block of almost-closing tags, one character at a time: each character
    # may only be held while it can still begin `</think>`.
    reply = "<think>" + "</thin" * 40_000
    started = time.perf_counter()
    thought, _ = split(list(reply))
    assert time.perf_counter() - started < 5
    assert thought == reply[len("<think>") :]


LOOKUP = ToolSpec(
    "lookup",
    "Look a word up.",
    {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
)
CALL_IN_REASONING = (
    '<think>Maybe I should call it:\n```json action\n{"tool": "lookup", "args": {"word": "x"}}'
    "\n```\nNo, I know this.</think>\n\nA word is a unit of language."
)


async def test_a_call_inside_reasoning_is_not_parsed_as_a_call() -> None:
    backend = PromptedBackend(ScriptedBackend([CALL_IN_REASONING]), constrained=False)
    request = ChatRequest([UserMessage("What is a word?")], tools=[LOOKUP])
    reply = await agather(backend.stream(request))
    assert reply.calls == ()
    assert reply.text == "A word is a unit of language."
    assert "call it" in reply.reasoning


async def test_a_thunk_keeps_reasoning_apart_from_its_value() -> None:
    session = Session(PromptedBackend(ScriptedBackend([CALL_IN_REASONING]), constrained=False))
    thunk = await session.chat("What is a word?")
    assert thunk.value == "A word is a unit of language."
    assert "No, I know this." in thunk.reasoning
