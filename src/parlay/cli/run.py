"""One user turn on the command line: stream the answer, run tool rounds, report.

The loop is the protocol way of handling tool results: `chat`, then `call_tools` for the
round's calls (each through `call_tool`, side by side unless `--tools-approve` asks one
question at a time; results recorded in call order), then `respond`, until the model
answers without calling or the chain limit is reached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attrs import define, field
from pydantic import BaseModel

from parlay.cli.protocol import CliSession
from parlay.context import ToolCall, ToolResult
from parlay.errors import ToolChainLimitError
from parlay.events import Usage
from parlay.request import ToolChoice
from parlay.thunk import ModelOutputThunk


@define
class TurnOutcome:
    text: str = ""
    rounds: int = 0
    model: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(factory=Usage)
    calls: list[tuple[ToolCall, ToolResult]] = field(factory=list)
    log_id: int | None = None  # the prompt's one row in the log, all its rounds included

    def as_dict(self, session_id: str | None) -> dict[str, Any]:
        return {
            "text": self.text,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "rounds": self.rounds,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "tool_calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "output": result.output,
                    "error": result.error,
                }
                for call, result in self.calls
            ],
            "log": {"session_id": session_id, "response_id": self.log_id},
        }


def run_turn(
    session: CliSession,
    text: str,
    *,
    tool_choice: str | None,
    chain_limit: int,
    write: Callable[[str], None] | None,
    format: type[BaseModel] | None = None,
) -> TurnOutcome:
    """Send `text`, streaming text to `write` (None: do not stream), running tool rounds."""
    outcome = TurnOutcome()
    choice = ToolChoice.coerce(tool_choice)
    made: list[tuple[ToolCall, ToolResult]] = []
    thunk: ModelOutputThunk[Any] = session.chat(text, tool_choice=choice, format=format)
    while True:
        if write is not None:
            wrote = False
            for delta in thunk:
                write(delta)
                wrote = wrote or bool(delta)
            if wrote:
                write("\n")
        text_out = thunk.value
        outcome.text = text_out
        outcome.model = thunk.model
        outcome.finish_reason = thunk.finish_reason
        if thunk.usage is not None:
            outcome.usage = outcome.usage + thunk.usage
        if session.log is not None:
            outcome.log_id = session.log.last_response_id
        calls = thunk.tools
        if not calls:
            break
        outcome.rounds += 1
        if outcome.rounds > chain_limit:
            outcome.calls = made
            raise ToolChainLimitError(
                f"the model was still calling tools after {chain_limit} rounds; "
                "raise --chain-limit",
                context=session.ctx,
                limit=chain_limit,
            )
        made.extend(zip(calls, session.call_tools(calls), strict=True))
        if choice.forces_call:
            choice = ToolChoice("auto")  # the forced call was made; now the model decides
        thunk = session.respond(tool_choice=choice, format=format)
    outcome.calls = made
    return outcome
