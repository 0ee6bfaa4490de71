"""Reasoning and tool search on the wire, in each protocol's own shape: thinking blocks,
Responses reasoning items, chat `reasoning_content`; `defer_loading` tools, the
`tool_reference` blocks that show them, and the server tool-search types."""

from __future__ import annotations

import json
from typing import Any

from parlay import ChatRequest, ToolResult, ToolSpec, UserMessage
from parlay.context import AssistantMessage, ToolCall
from parlay.engine.contract.pieces import ContractOptions
from parlay.engine.contract.render import render_contract
from parlay.events import Event, Finish, ReasoningDelta, TextDelta
from parlay.wire import (
    anthropic_client,
    anthropic_server,
    openai_client,
    openai_request,
    openai_server,
    responses_request,
    responses_server,
)
from parlay.wire.reply import gather
from parlay.wire.responses_stream import StreamEncoder as ResponsesStream

SCHEMA = {"type": "object", "properties": {"pattern": {"type": "string"}}}
SEARCH = {"name": "ToolSearch", "description": "Find deferred tools.", "input_schema": SCHEMA}
GREP = {"name": "Grep", "description": "Search files.", "input_schema": SCHEMA}
REPLY: list[Event] = [ReasoningDelta("first "), ReasoningDelta("plan"), TextDelta("Done.")]


def claude_code_search(found: bool, **extra: Any) -> dict[str, Any]:
    """Claude Code's tool search: Grep deferred; with `found`, a search that found it."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "grep for TODO"}]
    if found:
        call = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {}}
        result = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "tool_reference", "tool_name": "Grep"}],
        }
        thinking = {"type": "thinking", "thinking": "search first"}  # no signature
        messages += [
            {"role": "assistant", "content": [thinking, call]},
            {"role": "user", "content": [result, {"type": "text", "text": "Tool loaded."}]},
        ]
    tools = [SEARCH, {**GREP, "defer_loading": True}]
    return {"model": "m", "max_tokens": 64, "messages": messages, "tools": tools, **extra}


# -- tool search ---------------------------------------------------------------------------


def test_a_tool_reference_result_is_read_as_text_and_shows_the_tool() -> None:
    chat = anthropic_server.decode_request(claude_code_search(found=True)).chat
    result = next(m for m in chat.messages if isinstance(m, ToolResult))
    assert result.output == "Tool Grep is now available."
    assert result.references == ("Grep",)
    assert [t.name for t in chat.tools if t.deferred] == ["Grep"]
    assert [t.name for t in chat.shown_tools()] == ["ToolSearch", "Grep"]


def test_a_deferred_tool_is_not_shown_until_referenced() -> None:
    chat = anthropic_server.decode_request(claude_code_search(found=False)).chat
    assert [t.name for t in chat.shown_tools()] == ["ToolSearch"]
    contract = render_contract(chat, ContractOptions())
    assert [t.name for t in contract.tools] == ["ToolSearch"]
    assert "Grep" not in contract.messages[0].content


def test_the_engine_renders_a_referenced_tool() -> None:
    chat = anthropic_server.decode_request(claude_code_search(found=True)).chat
    contract = render_contract(chat, ContractOptions())
    assert [t.name for t in contract.tools] == ["ToolSearch", "Grep"]


def test_a_server_tool_search_type_is_not_refused_and_shows_every_tool() -> None:
    body = claude_code_search(found=False)
    body["tools"] = [
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search"},
        *body["tools"],
    ]
    chat = anthropic_server.decode_request(body).chat
    assert [t.name for t in chat.shown_tools()] == ["ToolSearch", "Grep"]


def test_an_anthropic_upstream_gets_defer_loading_and_the_reference_back() -> None:
    chat = anthropic_server.decode_request(claude_code_search(found=True)).chat
    body = anthropic_client.encode_request(chat, model="m", stream=False)
    assert body["tools"][1] == {**GREP, "defer_loading": True}
    result = body["messages"][2]["content"][0]
    assert result["content"] == [{"type": "tool_reference", "tool_name": "Grep"}]
    assert "thinking" not in json.dumps(body["messages"])  # reasoning is not replayed


def test_a_chat_upstream_gets_the_shown_tools_only() -> None:
    unfound = anthropic_server.decode_request(claude_code_search(found=False)).chat
    body = openai_client.encode_request(unfound, model="m", stream=False)
    assert [t["function"]["name"] for t in body["tools"]] == ["ToolSearch"]
    found = anthropic_server.decode_request(claude_code_search(found=True)).chat
    body = openai_client.encode_request(found, model="m", stream=False)
    assert [t["function"]["name"] for t in body["tools"]] == ["ToolSearch", "Grep"]
    assert body["messages"][2]["content"] == "Tool Grep is now available."


def test_chat_completions_reads_defer_loading_and_tool_references() -> None:
    function = {"name": "Grep", "parameters": SCHEMA}
    search = {"name": "ToolSearch", "parameters": SCHEMA}
    call = {"id": "c1", "type": "function", "function": {"name": "ToolSearch", "arguments": "{}"}}
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "grep"},
            {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "r"},
            {"role": "tool", "tool_call_id": "c1", "content": [
                {"type": "tool_reference", "tool_name": "Grep"}]},
        ],
        "tools": [
            {"type": "function", "function": search},
            {"type": "function", "function": function, "defer_loading": True},
        ],
    }  # fmt: skip
    chat = openai_request.decode_request(body).chat
    assert [t.deferred for t in chat.tools] == [False, True]
    assert [t.name for t in chat.shown_tools()] == ["ToolSearch", "Grep"]


def test_responses_accepts_tool_search_deferred_functions_and_reasoning_items() -> None:
    body = {
        "model": "m",
        "include": ["reasoning.encrypted_content"],
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "again"},
        ],
        "tools": [
            {"type": "tool_search"},
            {"type": "function", "name": "Grep", "parameters": SCHEMA, "defer_loading": True},
        ],
    }
    chat = responses_request.decode_request(body).chat
    assert [t.name for t in chat.shown_tools()] == ["Grep"]
    assert len(chat.messages) == 3


# -- reasoning out -------------------------------------------------------------------------


def test_anthropic_thinking_and_text_blocks_never_share_an_index() -> None:
    encoder = anthropic_server.StreamEncoder(model="m", id="msg_1")
    frames = [f for e in [*REPLY, Finish("stop")] for f in encoder.feed(e)]
    starts = [d for n, d in frames if n == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [
        (0, "thinking"),
        (1, "text"),
    ]
    assert starts[0]["content_block"]["signature"] == ""
    deltas = [d["delta"] for n, d in frames if n == "content_block_delta"]
    assert deltas[0] == {"type": "thinking_delta", "thinking": "first "}
    stops = [d["index"] for n, d in frames if n == "content_block_stop"]
    assert stops == [0, 1]


def test_anthropic_leaves_thinking_out_when_it_was_not_asked_for() -> None:
    assert not anthropic_server.shows_thinking({"model": "m"})
    assert not anthropic_server.shows_thinking(
        {"thinking": {"type": "adaptive", "display": "omitted"}}
    )
    assert anthropic_server.shows_thinking({"thinking": {"type": "enabled", "budget_tokens": 9}})
    encoder = anthropic_server.StreamEncoder(model="m", thinking=False)
    frames = [f for e in [*REPLY, Finish("stop")] for f in encoder.feed(e)]
    assert "plan" not in json.dumps(frames)
    whole = anthropic_server.encode_response(
        gather([*REPLY, Finish("stop")]), model="m", thinking=False
    )
    assert [b["type"] for b in whole["content"]] == ["text"]


def test_anthropic_whole_reply_has_a_thinking_block_first() -> None:
    whole = anthropic_server.encode_response(gather([*REPLY, Finish("stop")]), model="m")
    assert whole["content"] == [
        {"type": "thinking", "thinking": "first plan", "signature": ""},
        {"type": "text", "text": "Done."},
    ]


def test_chat_completions_sends_reasoning_content() -> None:
    encoder = openai_server.StreamEncoder(model="m")
    chunks = [c for e in REPLY for c in encoder.feed(e)]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas == [
        {"reasoning_content": "first "},
        {"reasoning_content": "plan"},
        {"content": "Done."},
    ]
    whole = openai_server.encode_response(gather([*REPLY, Finish("stop")]), model="m")
    message = whole["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == ("Done.", "first plan")


def test_responses_sends_a_reasoning_item_before_the_message() -> None:
    echo = responses_server.echo_of({"model": "m"})
    encoder = ResponsesStream(model="m", echo=echo, id="resp_1")
    frames = [f for e in [*REPLY, Finish("stop")] for f in encoder.feed(e)]
    done = [d["item"] for n, d in frames if n == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "message"]
    assert done[0]["summary"] == [{"type": "summary_text", "text": "first plan"}]
    assert [d["output_index"] for n, d in frames if n == "response.output_item.added"] == [0, 1]
    whole = responses_server.encode_response(gather([*REPLY, Finish("stop")]), model="m", echo=echo)
    assert [i["type"] for i in whole["output"]] == ["reasoning", "message"]


# -- reasoning in --------------------------------------------------------------------------


def test_reasoning_content_and_think_text_from_a_chat_upstream_are_reasoning() -> None:
    decoder = openai_client.StreamDecoder()
    chunks = [{"reasoning_content": "from the field "}, {"content": "<thi"},
              {"content": "nk>from the text</think>\n\nAnswer."}]  # fmt: skip
    events = [e for c in chunks for e in decoder.feed({"choices": [{"delta": c}]})]
    events += list(decoder.finish())
    reply = gather(events)
    assert (reply.reasoning, reply.text) == ("from the field from the text", "Answer.")
    whole = {"choices": [{"message": {"content": "<think>t</think>A", "reasoning_content": "r"}}]}
    reply = gather(openai_client.decode_response(whole))
    assert (reply.reasoning, reply.text) == ("rt", "A")


def test_anthropic_thinking_deltas_from_an_upstream_are_reasoning() -> None:
    decoder = anthropic_client.StreamDecoder()
    stream = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_stop"},
    ]  # fmt: skip
    reply = gather(e for data in stream for e in decoder.feed(data))
    assert (reply.reasoning, reply.text) == ("hm", "Hi.")


def test_reasoning_sent_back_is_not_sent_to_the_model() -> None:
    chat = anthropic_server.decode_request(claude_code_search(found=True)).chat
    assistant = next(m for m in chat.messages if isinstance(m, AssistantMessage))
    assert assistant == AssistantMessage("", (ToolCall("ToolSearch", {}, "toolu_1"),))
    request = ChatRequest([UserMessage("x")], tools=[ToolSpec("a", deferred=True), ToolSpec("b")])
    assert [t.name for t in request.shown_tools()] == ["b"]
