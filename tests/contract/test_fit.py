"""Fitting the contract into a small window: parlay's own additions shrink in order
(examples, then descriptions to their first paragraph, then to signatures), the
client's messages never do, and a request that cannot fit is refused with both counts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from parlay import PromptedBackend
from parlay.backends.base import Capabilities
from parlay.backends.scripted import ScriptedBackend
from parlay.backends.tokens import CountMethod, TokenCount
from parlay.backends.window import ContextWindow
from parlay.context import Message, SystemMessage, UserMessage
from parlay.engine.contract.fit import DEFAULT_REPLY_RESERVE, reply_reserve, signature
from parlay.errors import ContextWindowExceeded
from parlay.events import Finish
from parlay.request import ChatRequest, GenerationOptions, ToolSpec

LONG = "Runs a shell command and returns what it printed.\n\n" + (
    "Use it for git, tests and builds; quote paths with spaces. " * 40
)
TOOLS = (
    ToolSpec(
        "Bash",
        LONG,
        {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command. " * 30}},
            "required": ["command"],
        },
    ),
    ToolSpec("Read", "Reads a file.\n\n" + "Line numbers start at 1. " * 40, {"type": "object"}),
)
ASK = "list the files here please"


class Windowed(ScriptedBackend):
    """A plain-chat model with a window and an exact tokenizer of four characters a token."""

    def __init__(self, window: int, method: CountMethod = CountMethod.TOKENIZER) -> None:
        super().__init__(["Here they are."], capabilities=Capabilities(False, False))
        self.window = window
        self.method = method
        self.counted: list[int] = []

    async def context_window(self) -> ContextWindow:
        return ContextWindow(self.window, "test")

    async def count_tokens(self, request: ChatRequest) -> TokenCount:
        tokens = sum(len(m.content) // 4 + 4 for m in request.messages)
        self.counted.append(tokens)
        return TokenCount(tokens, self.method)


def request(max_tokens: int | None = 256, system: str = "You are terse.") -> ChatRequest:
    messages: list[Message] = [SystemMessage(system), UserMessage(ASK)]
    return ChatRequest(messages, tools=TOOLS, options=GenerationOptions(max_tokens=max_tokens))


def run(inner: Windowed, chat: ChatRequest) -> Finish:
    async def go() -> Finish:
        events = [e async for e in PromptedBackend(inner, constrained=False).stream(chat)]
        finish = events[-1]
        assert isinstance(finish, Finish)
        return finish

    return asyncio.run(go())


def sent_text(inner: Windowed) -> str:
    return "\n".join(m.content for m in inner.requests[-1].messages)


def shrunk_at(window: int) -> tuple[str, ...]:
    inner = Windowed(window)
    finish = run(inner, request())
    assert finish.diagnostics is not None
    # Whatever was shrunk, the client's own words went out whole.
    assert ASK in sent_text(inner) and "You are terse." in sent_text(inner)
    return finish.diagnostics.shrunk


def full_size() -> int:
    inner = Windowed(10**6)
    run(inner, request())
    return sum(len(m.content) // 4 + 4 for m in inner.requests[-1].messages)


def test_a_request_that_fits_is_sent_as_rendered_and_not_even_counted() -> None:
    inner = Windowed(10**6)
    finish = run(inner, request())
    assert finish.diagnostics is not None and finish.diagnostics.shrunk == ()
    assert inner.counted == []  # its bytes alone show it fits
    assert "<<user>>" not in sent_text(inner)
    assert len(inner.requests[-1].messages) > 3  # the example turns went out


def test_examples_go_first_when_the_window_is_tight() -> None:
    inner = Windowed(full_size() + 256 - 40)  # just short of what the full contract needs
    finish = run(inner, request())
    assert finish.diagnostics is not None
    assert finish.diagnostics.shrunk == ("examples",)
    assert len(inner.requests[-1].messages) == 2  # the system prompt and the question
    assert "quote paths with spaces" in sent_text(inner)  # descriptions kept whole


def test_descriptions_are_cut_to_their_first_paragraph_before_they_go() -> None:
    assert shrunk_at(1500) == ("examples",)
    assert shrunk_at(900) == ("examples", "descriptions")
    assert shrunk_at(400) == ("examples", "descriptions", "signatures")


def test_signatures_keep_names_and_types_but_no_words() -> None:
    bare = signature(TOOLS[0])
    assert bare.description == ""
    assert bare.parameters["properties"] == {"command": {"type": "string"}}
    assert bare.parameters["required"] == ["command"]


def test_a_request_that_cannot_fit_raises_context_window_exceeded_with_both_counts() -> None:
    inner = Windowed(1024)
    chat = request(system="Be terse. " * 600)  # the client's own system prompt is too big
    with pytest.raises(ContextWindowExceeded) as raised:
        run(inner, chat)
    error = raised.value
    assert error.window == 1024 - 256  # the window less the reply's reserve
    assert error.tokens is not None and error.tokens > error.window
    assert str(error).startswith(f"prompt is too long: {error.tokens} tokens > {error.window}")
    assert inner.requests == []  # nothing was sent, and nothing was cut to make it fit


def test_an_estimated_count_shrinks_but_never_refuses() -> None:
    inner = Windowed(1024, CountMethod.ESTIMATE)
    run(inner, request(system="Be terse. " * 600))
    # Sent as small as parlay could make it: the model server has the last word.
    assert ("Be terse. " * 600).strip() in sent_text(inner)
    assert "quote paths" not in sent_text(inner)


@pytest.mark.parametrize(
    ("max_tokens", "window", "reserve"),
    [(None, 8192, DEFAULT_REPLY_RESERVE), (64000, 4096, 1024), (200, 4096, 200)],
)
def test_the_reply_reserve_is_max_tokens_at_most_a_quarter_of_the_window(
    max_tokens: int | None, window: int, reserve: int
) -> None:
    chat = ChatRequest([UserMessage("hi")], options=GenerationOptions(max_tokens=max_tokens))
    assert reply_reserve(chat, None, window) == reserve


def test_a_backend_without_a_known_window_is_not_fitted() -> None:
    inner: Any = ScriptedBackend(["ok"], capabilities=Capabilities(False, False))

    async def go() -> Sequence[Any]:
        return [e async for e in PromptedBackend(inner).stream(request())]

    events = asyncio.run(go())
    assert isinstance(events[-1], Finish) and events[-1].diagnostics is not None
    assert events[-1].diagnostics.shrunk == ()


def test_a_deferred_tool_a_result_references_stays_shown_when_the_contract_shrinks() -> None:
    from parlay.context import AssistantMessage, ToolCall, ToolResult

    grep = ToolSpec("Grep", "Searches files.\n\n" + "Regex syntax. " * 80, {"type": "object"})
    hidden = ToolSpec("Glob", "Finds files by pattern.", {"type": "object"}, deferred=True)
    search = ToolCall("ToolSearch", {"query": "grep"}, id="s1")
    history: list[Message] = [
        UserMessage(ASK),
        AssistantMessage("", (search,)),
        ToolResult("s1", "ToolSearch", "", references=("Grep",)),
    ]
    tools = (*TOOLS, ToolSpec("ToolSearch", "Finds tools.", {"type": "object"}),
             ToolSpec(grep.name, grep.description, grep.parameters, deferred=True), hidden)  # fmt: skip
    inner = Windowed(900)
    run(inner, ChatRequest(history, tools=tools, options=GenerationOptions(max_tokens=256)))
    sent = sent_text(inner)
    assert "Grep" in sent and "Glob" not in sent
    assert "Regex syntax" not in sent  # its description shrank with the others
