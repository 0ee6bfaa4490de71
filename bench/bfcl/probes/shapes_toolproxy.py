"""Exploratory probe (issue 15, "Several calls"): toolproxy 0.6's emulated system prompt
(its text, tools listed with their JSON schemas, no few-shot turns) sent straight to
Qwen on the same questions as `shapes_parlay`, free or held to a grammar of its three
formats (`"type"` first: tool_call, tool_calls or final).

    python -m bench.bfcl.probes.shapes_toolproxy free|grammar
"""

import asyncio
import json
import sys
from typing import Any

import httpx

from bench.bfcl.data import Question
from bench.bfcl.models import models
from bench.bfcl.probes.shapes import scored, typed_grammar
from bench.bfcl.split import Half, select
from parlay.backends.local import shared_server

[model] = models(("qwen",))
url = shared_server(model.path, 8192).start()
half: Half = "validate" if sys.argv[2:] == ["validate"] else "tune"
qs = [
    q
    for c in ("parallel_multiple", "live_parallel", "live_parallel_multiple")
    for q in select(c, half, 5)
]
which = sys.argv[1]

TP = """You are a helpful AI assistant with access to the following tools:

{tools}

## CRITICAL INSTRUCTIONS

You MUST respond with ONLY a valid JSON object. No other text, no markdown, no explanation.

Your response must match EXACTLY one of these formats:

FORMAT 1 - When you need to use ONE tool:
{{"type": "tool_call", "tool": {{"tool_name": "<name>", "arguments": {{<key>: <value>}}}}}}

FORMAT 2 - When you need to use MULTIPLE tools in parallel (more efficient):
{{"type": "tool_calls", "tools": [{{"tool_name": "<name>", "arguments": {{...}}}}, {{"tool_name": "<name2>", "arguments": {{...}}}}]}}

FORMAT 3 - When you have a final answer:
{{"type": "final", "content": "<your answer here>"}}

Rules:
- Respond ONLY with raw JSON, nothing else.
- Always choose the correct tool from the list above.
- Arguments must match the tool's parameter types exactly.
- Use FORMAT 2 when multiple independent tools can run simultaneously.
- When you have enough information to answer, use FORMAT 3.
"""


def tools_text(q: Question) -> str:
    return "\n".join(
        f"- {t.name}: {t.description}\n  Parameters: {json.dumps(t.parameters)}"
        for t in q.offered_tools
    )


def grammar(q: Question) -> dict[str, Any]:
    return typed_grammar(q.offered_tools)


async def main() -> None:
    wins = multi = 0
    async with httpx.AsyncClient(timeout=300) as client:
        for q in qs:
            msgs = [{"role": "system", "content": TP.format(tools=tools_text(q))}]
            msgs += [
                {
                    "role": m.role
                    if hasattr(m, "role")
                    else type(m).__name__.replace("Message", "").lower(),
                    "content": m.content,
                }
                for m in q.messages
                if type(m).__name__ != "SystemMessage"
            ]
            body = {"model": "m", "messages": msgs, "temperature": 0, "seed": 0, "max_tokens": 512}
            if which == "grammar":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "a", "schema": grammar(q), "strict": True},
                }
            r = await client.post(url + "/chat/completions", json=body)
            text = r.json()["choices"][0]["message"]["content"]
            valid, count = scored(q, text)
            wins += valid
            multi += count > 1
        print(which, "right", wins, "several", multi, "of", len(qs))


asyncio.run(main())
