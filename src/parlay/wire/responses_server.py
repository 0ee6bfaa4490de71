"""OpenAI Responses API, server side, encoding: a reply as a `response` object, and the
pieces of one that the stream (`responses_stream`) sends too.

A response repeats the request's settings (`tools`, `tool_choice`, `instructions`,
`text`, ...) because clients and the SDK's `Response` model read them there. `store` is
always false: nothing is kept. A call of a function offered from a `namespace` tool goes
out under the function's own name with its `namespace`, as OpenAI writes such calls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from attrs import frozen

from parlay.events import (
    Finish,
    FinishReason,
    Usage,
)
from parlay.wire.openai_server import encode_error
from parlay.wire.reply import Reply
from parlay.wire.responses_request import (
    ResponsesRequest,
    ToolLayout,
    decode_request,
    tool_layout,
)

__all__ = [
    "ECHOED",
    "Echo",
    "ResponsesRequest",
    "decode_request",
    "echo_of",
    "encode_error",
    "encode_response",
    "new_response_id",
    "tool_layout",
]

# The stream's events come from parlay.wire.responses_stream.StreamEncoder.

Status = Literal["completed", "incomplete", "failed"]

# The request fields a `response` object repeats, and what it says when one was not sent.
ECHOED: dict[str, Any] = {
    "instructions": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "metadata": {},
    "parallel_tool_calls": True,
    "prompt_cache_key": None,
    "reasoning": {"effort": None, "summary": None},
    "safety_identifier": None,
    "service_tier": "default",
    "temperature": None,
    "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": None,
    "top_p": None,
    "truncation": "disabled",
    "user": None,
}

# What ends a reply, as the response's status and `incomplete_details.reason`.
ENDINGS: dict[FinishReason, tuple[Status, str | None]] = {
    "stop": ("completed", None),
    "tool_calls": ("completed", None),
    "length": ("incomplete", "max_output_tokens"),
    "content_filter": ("incomplete", "content_filter"),
    "error": ("failed", None),
}
_FAILED_REPLY = "the model's reply ended in an error"


def new_response_id() -> str:
    return "resp_" + uuid.uuid4().hex


@frozen
class Echo:
    """What a response repeats of its request: the `ECHOED` fields and the tool layout."""

    fields: dict[str, Any]
    layout: ToolLayout


def echo_of(body: Mapping[str, Any]) -> Echo:
    """The echo of a request body that `decode_request` accepted."""
    fields = {
        key: default if body.get(key) is None else body[key] for key, default in ECHOED.items()
    }
    tools = body.get("tools")
    return Echo(fields, tool_layout(tools if isinstance(tools, list) else None))


def encode_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def response_object(
    rid: str, created: int, model: str, echo: Echo, status: str, output: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "previous_response_id": None,
        "store": False,
        **echo.fields,
        "usage": None,
    }


def finish_response(response: dict[str, Any], finish: Finish) -> dict[str, Any]:
    """`response` as it ends with `finish`: status, its reason or error, usage."""
    status, reason = ENDINGS[finish.reason]
    response["status"] = status
    response["usage"] = encode_usage(finish.usage or Usage())
    if status == "completed":
        response["completed_at"] = int(time.time())
    elif reason is not None:
        response["incomplete_details"] = {"reason": reason}
    else:
        response["error"] = {"code": "server_error", "message": _FAILED_REPLY}
    return response


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, status: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": parts,
    }


def call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str, layout: ToolLayout
) -> dict[str, Any]:
    item = {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }
    if name in layout.namespaced:
        item["namespace"], item["name"] = layout.namespaced[name]
    return item


def reasoning_item(item_id: str, text: str | None) -> dict[str, Any]:
    """A `reasoning` item: the model's reasoning as its summary text (None: still empty,
    as the item is announced). Codex asks for `reasoning.encrypted_content`; parlay has
    nothing to encrypt, and an item without it is what a client sends back as is."""
    summary = [] if text is None else [summary_part(text)]
    return {"id": item_id, "type": "reasoning", "summary": summary}


def summary_part(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def item_id_for(rid: str, kind: str, index: int) -> str:
    return f"{kind}_{rid.removeprefix('resp_')}_{index}"


def encode_response(
    reply: Reply, *, model: str, echo: Echo, id: str | None = None, created: int | None = None
) -> dict[str, Any]:
    """A `response` object for a whole reply."""
    rid = id or new_response_id()
    created = int(time.time()) if created is None else created
    status, _ = ENDINGS[reply.finish.reason]
    # The text was cut only when nothing came after it (as the stream closes a message
    # the moment a call begins).
    cut = status == "incomplete" and not reply.calls
    item_status = "incomplete" if cut else "completed"
    output: list[dict[str, Any]] = []
    if reply.reasoning:
        output.append(reasoning_item(item_id_for(rid, "rs", 0), reply.reasoning))
    if reply.text or not reply.calls:
        parts = [text_part(reply.text)]
        output.append(message_item(item_id_for(rid, "msg", len(output)), item_status, parts))
    for call in reply.calls:
        item_id = item_id_for(rid, "fc", len(output))
        output.append(
            call_item(item_id, call.id, call.name, call.arguments_json, "completed", echo.layout)
        )
    response = response_object(rid, created, model, echo, "in_progress", output)
    return finish_response(response, reply.finish)
