"""A reply parlay's loop guard stopped reaches a client as a finished turn in every
protocol, not as the client's own token limit: Claude Code read "max_tokens" as its
64,000-token limit reached, asked the model to go on, and failed the task (seen with
the embedded model in bench/agents.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from proxy_harness import running

from parlay.backends.base import Capabilities
from parlay.backends.bounds import RepetitionLimit, guarded
from parlay.backends.scripted import ScriptedBackend
from parlay.context import ToolCall
from parlay.events import Event
from parlay.request import ChatRequest
from parlay.server import create_app

LOOP = "The answer is: " + "2.0-v0." * 200


class Looping:
    """A model that falls into a loop, behind the real repetition guard."""

    name = "looping"
    capabilities = Capabilities(native_tools=True, json_schema=False)

    def __init__(self, reply: str | ToolCall) -> None:
        self.inner = ScriptedBackend([reply])

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        return guarded(self.inner.stream(request), RepetitionLimit())


def ask(url: str, api: str, stream: bool) -> list[str]:
    """The finish reasons the client read (one per reply, or per streamed end)."""
    user = [{"role": "user", "content": "What is the version?"}]
    if api == "anthropic":
        path, body = "/v1/messages", {"messages": user, "max_tokens": 64000}
    elif api == "openai":
        path, body = "/v1/chat/completions", {"messages": user}
    else:
        path, body = "/v1/responses", {"input": "What is the version?"}
    body.update(model="m", stream=stream)
    reply = httpx.post(url + path, json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    if not stream:
        data = reply.json()
        return [data.get("stop_reason") or data.get("status")
                or data["choices"][0]["finish_reason"]]  # fmt: skip
    return [line for line in reply.text.splitlines() if _ending(line)]


def _ending(line: str) -> bool:
    return any(mark in line for mark in ('"stop_reason":"', '"finish_reason":"',
                                         '"status":"completed"', '"status":"incomplete"'))  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["anthropic", "openai", "responses"])
def test_a_reply_stopped_in_a_loop_reads_as_a_finished_turn_not_the_token_limit(
    api: str, stream: bool
) -> None:
    with running(create_app(Looping(LOOP))) as server:
        endings = ask(server.url, api, stream)
    said = " ".join(endings)
    assert endings, "no ending was sent"
    assert "max_tokens" not in said and '"length"' not in said and said != "length"
    assert '"status":"incomplete"' not in said and said != "incomplete"
    expected: dict[str, Any] = {"anthropic": "end_turn", "openai": "stop", "responses": "completed"}
    assert expected[api] in said


def test_a_looping_reply_that_holds_a_call_still_says_it_was_cut() -> None:
    """A call the guard cut must not pass for a whole one."""
    from parlay.backends.bounds import loops_end_the_turn
    from parlay.diagnostics import Diagnostics
    from parlay.events import Finish, ToolCallStart

    async def events() -> AsyncIterator[Event]:
        yield ToolCallStart("call_1", "lookup", 0)
        yield Finish("length", diagnostics=Diagnostics(repetition="2.0-v0."))

    async def collect() -> list[Event]:
        return [event async for event in loops_end_the_turn(events())]

    import asyncio

    finish = asyncio.run(collect())[-1]
    assert isinstance(finish, Finish) and finish.reason == "length"
