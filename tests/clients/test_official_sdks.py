"""The official `openai` and `anthropic` SDKs, unmodified, doing the note task through
`parlay serve` in both modes, streaming and not."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from client_harness import Proxy
from client_task import PROMPT, NoteTask, anthropic_tools, openai_tools

ROUNDS = 5  # more than the task needs: a client stuck in a loop fails, not hangs


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_chat_completions(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    for _ in range(ROUNDS):
        if stream:
            with client.chat.completions.stream(
                model="parlay", messages=messages, tools=openai_tools()
            ) as events:
                message = events.get_final_completion().choices[0].message
        else:
            completion = client.chat.completions.create(
                model="parlay", messages=messages, tools=openai_tools()
            )
            message = completion.choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            output = task.run(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    task.check(message.content or "")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_messages(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    for _ in range(ROUNDS):
        kwargs: dict[str, Any] = {
            "model": "claude-parlay", "max_tokens": 1024, "messages": messages,
            "tools": anthropic_tools(),
        }  # fmt: skip
        if stream:
            with client.messages.stream(**kwargs) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": task.run(u.name, u.input)}
            for u in uses
        ]
        messages.append({"role": "user", "content": results})
    task.check("".join(block.text for block in reply.content if block.type == "text"))


def responses_tools() -> list[dict[str, Any]]:
    """The flat Responses shape of the task's tools."""
    return [{"type": "function", **t["function"]} for t in openai_tools()]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_responses(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0)
    items: list[Any] = [{"role": "user", "content": PROMPT}]
    for _ in range(ROUNDS):
        kwargs: dict[str, Any] = {"model": "parlay", "input": items, "tools": responses_tools()}
        if stream:
            with client.responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**kwargs)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        items.extend(item.model_dump(exclude_none=True) for item in response.output)
        for call in calls:
            output = task.run(call.name, json.loads(call.arguments))
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
    assert response.status == "completed"
    task.check(response.output_text)
