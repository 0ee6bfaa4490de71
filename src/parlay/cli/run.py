"""One user turn on the command line: stream the answer, report what the tools did.

The tool loop is the session's own (`chat(..., run_tools=True)`, the loop `query` runs):
each call goes through the CLI's protocol hooks (`CliSession.call_tool`: shown with
`--tools-debug`, asked with `--tools-approve`), and the turn is one thunk whose rounds
the log records as one row. Here we only stream its text and sum it up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attrs import define, field
from pydantic import BaseModel
from rich.console import Console

from parlay._sync import iterate_sync
from parlay.cli.progress import WaitStatus
from parlay.cli.protocol import CliSession
from parlay.context import AssistantMessage, ToolCall, ToolResult
from parlay.errors import ToolCallTruncatedError, ToolChainLimitError
from parlay.events import Finish, TextDelta, ToolCallStart, Usage
from parlay.request import ToolChoice
from parlay.thunk import ModelOutputThunk

# How long Ctrl-C waits for a stopped turn to reach the log; a second Ctrl-C cuts it short.
CANCEL_WAIT_SECONDS = 10.0


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
    status: WaitStatus | None = None,
) -> TurnOutcome:
    """Send `text`, streaming text to `write` (None: do not stream), running tool rounds;
    `status` is shown while nothing has arrived yet."""
    status = status or WaitStatus(Console(stderr=True), None, enabled=False)
    thunk: ModelOutputThunk[Any] = session.chat(
        text,
        tool_choice=ToolChoice.coerce(tool_choice),
        format=format,
        run_tools=True,
        chain_limit=chain_limit,
    )
    try:
        status.start()
        if write is not None:
            _stream(thunk, write, status)
        thunk.value  # noqa: B018 - waits for the turn (and its log row) when not streaming
    except ToolChainLimitError as exc:
        raise ToolChainLimitError(
            f"the model was still calling tools after {chain_limit} rounds; raise --chain-limit",
            context=exc.context,
            limit=exc.limit,
        ) from None
    except ToolCallTruncatedError as exc:
        raise ToolCallTruncatedError(
            f"the reply reached its token limit while writing a call to {exc.call.name!r}; "
            "no tool of the round ran. Raise --max-tokens",
            context=exc.context,
            call=exc.call,
        ) from None
    except KeyboardInterrupt:
        # Ctrl-C stops the turn itself, not only this thread's wait for it, and lets it
        # unwind: its finished rounds (tools that ran) reach the log as "cancelled".
        thunk.cancel(wait=CANCEL_WAIT_SECONDS)
        raise
    finally:
        status.stop()
    return _outcome(thunk, session)


def _stream(thunk: ModelOutputThunk[Any], write: Callable[[str], None], status: WaitStatus) -> None:
    """Each round's text as it comes, a line break after any round that wrote some; the
    status line while a round has sent nothing yet."""
    wrote = False
    for event in iterate_sync(thunk.events()):
        if isinstance(event, TextDelta):
            if event.text:
                status.stop()
            write(event.text)
            wrote = wrote or bool(event.text)
        elif isinstance(event, ToolCallStart):
            status.stop()  # the tools' own lines (--tools-debug) follow
        elif isinstance(event, Finish):
            if wrote:
                write("\n")
            wrote = False
            status.start()  # the next round, if any, is a wait of its own


def _outcome(thunk: ModelOutputThunk[Any], session: CliSession) -> TurnOutcome:
    results = {m.call_id: m for m in thunk.steps if isinstance(m, ToolResult)}
    rounds = [m for m in thunk.steps if isinstance(m, AssistantMessage)]
    return TurnOutcome(
        text=thunk.value,
        rounds=len(rounds),
        model=thunk.model,
        finish_reason=finish_reason(thunk),
        usage=thunk.usage or Usage(),
        calls=[(c, results[c.id]) for m in rounds for c in m.tool_calls if c.id in results],
        log_id=session.log.last_response_id if session.log is not None else None,
    )


def finish_reason(thunk: ModelOutputThunk[Any]) -> str | None:
    """Why the reply ended, as `--json` reports it: the thunk's reason, except
    "repetition" where parlay's loop guard stopped a reply that kept saying the same
    thing (the thunk says "length", the nearest reason the protocols have, yet its text
    holds what was said once: not an answer cut by the token budget)."""
    diagnostics = thunk.diagnostics
    if thunk.finish_reason == "length" and diagnostics is not None and diagnostics.repetition:
        return "repetition"
    return thunk.finish_reason
