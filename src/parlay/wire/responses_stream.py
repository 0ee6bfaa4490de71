"""OpenAI Responses API, server side, streaming: parlay's events as the Responses stream
of named events (`response.created` ... `response.completed`), each with its
`sequence_number`, in the order OpenAI sends them."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from parlay.context import ToolCall
from parlay.events import (
    Event,
    Finish,
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from parlay.wire.responses_server import (
    ECHOED,
    ENDINGS,
    Echo,
    call_item,
    finish_response,
    item_id_for,
    message_item,
    new_response_id,
    reasoning_item,
    response_object,
    summary_part,
    text_part,
)
from parlay.wire.sse import compact_json, encode_event

Frame = tuple[str, dict[str, Any]]  # (event name, data)


class _OpenCall:
    def __init__(self, index: int, item_id: str, name: str) -> None:
        self.index = index
        self.item_id = item_id
        self.name = name
        self.streamed = False


def _error_code(status: int) -> str:
    if status == 429:
        return "rate_limit_exceeded"
    if status in (400, 413):
        return "invalid_prompt"
    return "server_error"


class StreamEncoder:
    """parlay events in, Responses stream events out, as (event name, data) pairs.

    `start()` gives `response.created` and `response.in_progress`; `feed(event)` the
    events for one parlay event: a message item opens at the first text and closes when
    a call begins or the reply ends; each call is a `function_call` item of its own. The
    `Finish` closes what is open and ends the stream with `response.completed`, or
    `response.incomplete` (the reply hit its token limit or a content filter).
    `error(...)` ends it with an `error` event and `response.failed`.
    """

    def __init__(
        self, *, model: str, echo: Echo, id: str | None = None, created: int | None = None
    ) -> None:
        self.id = id or new_response_id()
        self.created = int(time.time()) if created is None else created
        self.model = model
        self.echo = echo
        self._sequence = 0
        self._started = False
        self._ended = False
        self._done: dict[int, dict[str, Any]] = {}  # finished items, by output index
        self._count = 0  # output indexes handed out
        self._message: tuple[int, str] | None = None  # (index, item id) of the open message
        self._text: list[str] = []
        self._reasoning: tuple[int, str] | None = None  # the open reasoning item
        self._thought: list[str] = []
        self._shown_items = 0  # message and call items: a reply of none still holds one
        self._calls: dict[str, _OpenCall] = {}
        # Calls already closed: a second start or end of one is not a second call (the
        # SDK refuses two items of one call id).
        self._closed_calls: set[str] = set()

    def _event(self, kind: str, **data: Any) -> Frame:
        frame = (kind, {"type": kind, **data, "sequence_number": self._sequence})
        self._sequence += 1
        return frame

    def _snapshot(self, status: str) -> dict[str, Any]:
        output = [self._done[i] for i in sorted(self._done)]
        return response_object(self.id, self.created, self.model, self.echo, status, output)

    def start(self) -> list[Frame]:
        self._started = True
        return [
            self._event("response.created", response=self._snapshot("in_progress")),
            self._event("response.in_progress", response=self._snapshot("in_progress")),
        ]

    def feed(self, event: Event) -> list[Frame]:
        if self._ended:
            return []
        if isinstance(event, ReasoningDelta):
            return self._reasoning_delta(event.text) if event.text else []
        # Whatever follows reasoning closes its item first: items never interleave.
        closed = self._close_reasoning() if self._reasoning is not None else []
        return [*closed, *self._feed(event)]

    def _feed(self, event: Event) -> list[Frame]:
        if isinstance(event, TextDelta):
            return self._text_delta(event.text) if event.text else []
        if isinstance(event, ToolCallStart):
            return [*self._close_message(), *self._open_call(event.id, event.name)]
        if isinstance(event, ToolCallArgsDelta):
            call = self._calls.get(event.id)
            if call is None or not event.delta:
                return []
            call.streamed = True
            return [self._args_delta(call, event.delta)]
        if isinstance(event, ToolCallEnd):
            return self._end_call(event.call)
        if isinstance(event, Finish):
            return self._finish(event)
        return []

    # -- the reasoning item ------------------------------------------------------------
    def _reasoning_delta(self, text: str) -> list[Frame]:
        out: list[Frame] = []
        if self._reasoning is None:
            out.extend(self._close_message())
            index, item_id = self._count, item_id_for(self.id, "rs", self._count)
            self._count += 1
            self._reasoning, self._thought = (index, item_id), []
            item = reasoning_item(item_id, None)
            out.append(self._event("response.output_item.added", output_index=index, item=item))
            out.append(self._summary_event("response.reasoning_summary_part.added", ""))
        index, item_id = self._reasoning or (0, "")
        self._thought.append(text)
        where = {"item_id": item_id, "output_index": index, "summary_index": 0}
        out.append(self._event("response.reasoning_summary_text.delta", **where, delta=text))
        return out

    def _summary_event(self, kind: str, text: str) -> Frame:
        index, item_id = self._reasoning or (0, "")
        where = {"item_id": item_id, "output_index": index, "summary_index": 0}
        return self._event(kind, **where, part=summary_part(text))

    def _close_reasoning(self) -> list[Frame]:
        index, item_id = self._reasoning or (0, "")
        text = "".join(self._thought)
        where = {"item_id": item_id, "output_index": index, "summary_index": 0}
        out = [
            self._event("response.reasoning_summary_text.done", **where, text=text),
            self._summary_event("response.reasoning_summary_part.done", text),
        ]
        item = self._done[index] = reasoning_item(item_id, text)
        self._reasoning = None
        out.append(self._event("response.output_item.done", output_index=index, item=item))
        return out

    # -- the message item --------------------------------------------------------------
    def _open_message(self) -> list[Frame]:
        index, item_id = self._count, item_id_for(self.id, "msg", self._count)
        self._count += 1
        self._shown_items += 1
        self._message = (index, item_id)
        self._text = []
        item = message_item(item_id, "in_progress", [])
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._part_event("response.content_part.added", text_part("")),
        ]

    def _text_delta(self, text: str) -> list[Frame]:
        out = self._open_message() if self._message is None else []
        index, item_id = self._message or (0, "")
        self._text.append(text)
        out.append(
            self._event(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=text,
                logprobs=[],
            )
        )
        return out

    def _part_event(self, kind: str, part: dict[str, Any]) -> Frame:
        assert self._message is not None
        index, item_id = self._message
        return self._event(kind, item_id=item_id, output_index=index, content_index=0, part=part)

    def _close_message(self, status: str = "completed") -> list[Frame]:
        if self._message is None:
            return []
        index, item_id = self._message
        text = "".join(self._text)
        done = self._event(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        part = self._part_event("response.content_part.done", text_part(text))
        item = message_item(item_id, status, [text_part(text)])
        self._done[index] = item
        self._message = None
        return [done, part, self._event("response.output_item.done", output_index=index, item=item)]

    # -- function call items -----------------------------------------------------------
    def _open_call(self, call_id: str, name: str) -> list[Frame]:
        if call_id in self._calls or call_id in self._closed_calls:
            return []
        index = self._count
        self._count += 1
        self._shown_items += 1
        call = self._calls[call_id] = _OpenCall(index, item_id_for(self.id, "fc", index), name)
        item = call_item(call.item_id, call_id, name, "", "in_progress", self.echo.layout)
        return [self._event("response.output_item.added", output_index=index, item=item)]

    def _args_delta(self, call: _OpenCall, delta: str) -> Frame:
        return self._event(
            "response.function_call_arguments.delta",
            item_id=call.item_id,
            output_index=call.index,
            delta=delta,
        )

    def _end_call(self, tool_call: ToolCall) -> list[Frame]:
        if tool_call.id in self._closed_calls:
            return []
        out = self._close_message()
        if tool_call.id not in self._calls:  # an end without a start: the whole call at once
            out.extend(self._open_call(tool_call.id, tool_call.name))
        call = self._calls.pop(tool_call.id)
        self._closed_calls.add(tool_call.id)
        arguments = tool_call.arguments_json
        if not call.streamed:
            out.append(self._args_delta(call, arguments))
        out.append(
            self._event(
                "response.function_call_arguments.done",
                item_id=call.item_id,
                output_index=call.index,
                arguments=arguments,
            )
        )
        layout = self.echo.layout
        item = call_item(call.item_id, tool_call.id, tool_call.name, arguments, "completed", layout)
        self._done[call.index] = item
        out.append(self._event("response.output_item.done", output_index=call.index, item=item))
        return out

    def _abandon_calls(self) -> list[Frame]:
        """Calls that began and never ended: their arguments are unknown, so they are
        closed as incomplete and left out of the response's output."""
        out: list[Frame] = []
        layout = self.echo.layout
        for call_id, call in self._calls.items():
            self._closed_calls.add(call_id)
            item = call_item(call.item_id, call_id, call.name, "", "incomplete", layout)
            out.append(self._event("response.output_item.done", output_index=call.index, item=item))
        self._calls.clear()
        return out

    # -- the end -----------------------------------------------------------------------
    def _finish(self, finish: Finish) -> list[Frame]:
        status, _ = ENDINGS[finish.reason]
        item_status = "incomplete" if status == "incomplete" else "completed"
        # A reply of nothing still holds a message, as the whole reply does.
        opened = self._open_message() if self._shown_items == 0 else []
        out = [*opened, *self._close_message(item_status), *self._abandon_calls()]
        self._ended = True
        response = finish_response(self._snapshot("in_progress"), finish)
        return [*out, self._event(f"response.{status}", response=response)]

    def error(self, status: int, message: str, code: str | None = None) -> list[Frame]:
        """The stream ends in a failure: an `error` event, then `response.failed` (nothing,
        once a terminal event went out: the client has its whole response). `code`: the
        failure's own (`context_length_exceeded`), else one from the status."""
        if self._ended:
            return []
        out = [] if self._started else self.start()
        self._ended = True
        code = code or _error_code(status)
        out.append(self._event("error", code=code, message=message, param=None))
        response = self._snapshot("failed")
        response["error"] = {"code": code, "message": message}
        out.append(self._event("response.failed", response=response))
        return out


class FrameWriter:
    """Frames as server-sent-event bytes.

    The request's echo (its tools and their schemas above all) is the same in the three
    whole `response` objects a stream sends: it is serialized once per stream and
    spliced into each, instead of three times (for Codex CLI's tools, kilobytes each).
    """

    def __init__(self, echo: Echo) -> None:
        self._echo = compact_json(echo.fields)[1:-1]  # the members, without the braces

    def write(self, frames: Iterable[Frame]) -> bytes:
        return b"".join(encode_event(self._render(name, data), name) for name, data in frames)

    def _render(self, name: str, data: dict[str, Any]) -> str | dict[str, Any]:
        response = data.get("response")
        if response is None:
            return data
        own = compact_json({k: v for k, v in response.items() if k not in ECHOED})
        return (
            f'{{"type":{compact_json(name)},"response":{own[:-1]},{self._echo}}},'
            f'"sequence_number":{data["sequence_number"]}}}'
        )
