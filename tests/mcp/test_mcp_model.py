"""An MCP server's tools on the embedded model: SmolLM2-135M through a real llama.cpp
server and the prompted engine, the test MCP server over stdio. Protocol facts only."""

from __future__ import annotations

import pytest
from mcp_harness import GUARD, SERVER, within

from parlay import GenerationOptions, Session, ToolLoopError, ToolResult
from parlay.backends.openai import OpenAIBackend
from parlay.engine.backend import PromptedBackend
from parlay.mcp import MCPTools
from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE

pytestmark = pytest.mark.model


def test_the_model_calls_an_mcp_tool_through_the_loop(llama_backend: OpenAIBackend):
    backend = PromptedBackend(llama_backend, min_call_confidence=EMBEDDED_MIN_CALL_CONFIDENCE)
    with MCPTools.stdio(SERVER, include=["add", "forecast"]) as tools:
        session = Session(
            backend, tools=tools, options=GenerationOptions(temperature=0, max_tokens=60)
        )
        history = len(session.ctx.messages())

        def ask() -> tuple[ToolResult, ...]:
            try:
                thunk = session.query(
                    "2 and 3", "What is 2 plus 3?", tool_choice="add", chain_limit=1
                )
                return tuple(m for m in thunk.steps if isinstance(m, ToolResult))
            except ToolLoopError as exc:
                # A small model may keep calling, or be cut by the 60-token budget in its
                # next call: either way the forced round's results are in the context.
                steps = exc.context.messages()[history + 1 :]
                return tuple(m for m in steps if isinstance(m, ToolResult))

        results = within(GUARD * 5, ask)
    assert results, "the forced call produced no tool result"
    first = results[0]
    assert first.name == "add"
    # The server answered (an integer sum), or parlay checked the arguments against the
    # server's schema and told the model why not: either way the MCP path ran.
    assert first.output.lstrip("-").isdigit() or (first.error or "").startswith("invalid arguments")
