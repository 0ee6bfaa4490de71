"""Exploratory probe (issue 15, "Several calls"): split the request first, in a request of
its own, then ask each part through the shipped engine as a single call.

The single-call path is Qwen's strongest (about half right); the parallel categories get
0 from the json reply. Earlier probes asked for the split inside the action reply
("requests" first: every reply turned to words) or for the calls one after another
(after one call, always `final`). Here the model only splits, under a grammar
(`{"requests": [one to six strings]}`), with three example turns of its own (none from
BFCL), and each part then goes to the engine with `parallel_tool_calls` off.

    python -m bench.bfcl.probes.split CATEGORY[,CATEGORY] [N] [tools] [whole]

`tools`: the splitter also sees the offered functions' names and descriptions. `whole`:
a request the splitter leaves in one piece goes to the engine as it came, with parallel
calls allowed, which is the shipped engine's stored outcome (the question is not asked
again): the shape a rule would take, so only the split questions are asked. Prints one
line a question, beside the stored outcome of the shipped engine (tag stop16) on the same
question, and the paired tally. Tune half only; run under the model lock.
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from bench.bfcl.checker import check
from bench.bfcl.data import Question
from bench.bfcl.models import models
from bench.bfcl.split import select
from bench.bfcl.systems import Setup, gather, greedy, shipped_engine
from parlay.backends.local import shared_server
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.request import ChatRequest

SPLITTER = (
    "You split a user's message into the separate requests it makes, so that each one "
    "can be done by a single function call.\n"
    "- If the message asks for one thing, return it unchanged as the only request.\n"
    "- If it asks for several things, or for the same thing for several values (several "
    "cities, several numbers, several people), write one request for each.\n"
    "- Each request must stand on its own: repeat every name, number, unit and place it "
    "needs from the message.\n"
    'Reply with JSON: {"requests": ["...", ...]}'
)
EXAMPLES = (
    (
        "What's the weather like in Paris and in Rome, in celsius?",
        [
            "What's the weather like in Paris, in celsius?",
            "What's the weather like in Rome, in celsius?",
        ],
    ),
    ("Convert 30 miles to kilometres.", ["Convert 30 miles to kilometres."]),
    (
        "Book a flight from Oslo to Berlin on May 3 and find me a hotel in Berlin for two nights.",
        ["Book a flight from Oslo to Berlin on May 3.", "Find a hotel in Berlin for two nights."],
    ),
)
PARTS_GRAMMAR = {
    "type": "object",
    "properties": {
        "requests": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 400},
            "minItems": 1,
            "maxItems": 6,
        }
    },
    "required": ["requests"],
}
STORE = Path(__file__).parents[3] / "bench" / "results" / "bfcl-dev.jsonl"


def splitter_messages(q: Question, with_tools: bool) -> list[dict[str, Any]]:
    system = SPLITTER
    if with_tools:
        listed = "\n".join(f"- {t.name}: {t.description}" for t in q.offered_tools)
        system += f"\n\nFunctions available:\n{listed}"
    turns: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for asked, parts in EXAMPLES:
        turns.append({"role": "user", "content": asked})
        turns.append({"role": "assistant", "content": json.dumps({"requests": parts})})
    last = next(m.content for m in reversed(q.messages) if isinstance(m, UserMessage))
    turns.append({"role": "user", "content": last})
    return turns


async def split(client: httpx.AsyncClient, url: str, q: Question, with_tools: bool) -> list[str]:
    body = {
        "model": "m",
        "messages": splitter_messages(q, with_tools),
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "parts", "schema": PARTS_GRAMMAR},
        },
        "temperature": 0,
        "seed": 0,
        "max_tokens": 600,
    }
    r = await client.post(url + "/chat/completions", json=body)
    text = r.json()["choices"][0]["message"]["content"]
    try:
        return [p for p in json.loads(text)["requests"] if p.strip()]
    except (ValueError, KeyError, TypeError):
        return []


async def calls_for(engine: PromptedBackend, q: Question, part: str) -> list[tuple[str, Any]]:
    """The engine asked one part, in place of the user's last message, one call at most."""
    last = max(i for i, m in enumerate(q.messages) if isinstance(m, UserMessage))
    messages = (*q.messages[:last], UserMessage(part), *q.messages[last + 1 :])
    request = ChatRequest(
        messages, tools=q.offered_tools, parallel_tool_calls=False, options=greedy(None)
    )
    return (await gather(engine, request)).calls


def stored_shipped() -> dict[str, bool]:
    """The shipped engine's outcome (tag stop16, commit 8aae680) per question on Qwen."""
    rows = (json.loads(line) for line in STORE.open())
    return {
        r["question"]: r["right"]
        for r in rows
        if r["model"] == "qwen" and r["system"] == "parlay" and r["commit"] == "8aae680"
    }


async def main() -> None:
    cats = sys.argv[1].split(",")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with_tools = "tools" in sys.argv[3:]
    whole = "whole" in sys.argv[3:]
    [model] = models(("qwen",))
    url = shared_server(model.path, 8192).start()
    engine = shipped_engine(Setup(model, url, 8192, 512))
    shipped = stored_shipped()
    tally = {"right": 0, "won": 0, "lost": 0, "n": 0}
    async with httpx.AsyncClient(timeout=300) as client:
        for q in [q for c in cats for q in select(c, "tune", n)]:
            parts = await split(client, url, q, with_tools)
            before = shipped.get(q.id)
            calls: list[tuple[str, Any]] = []
            if whole and len(parts) < 2 and before is not None:
                right = before
            else:
                for part in parts:
                    calls += [c for c in await calls_for(engine, q, part) if c not in calls]
                right = check(q.category, q.functions, calls, q.ground_truth).valid
            tally["n"] += 1
            tally["right"] += right
            tally["won"] += right and before is False
            tally["lost"] += (not right) and before is True
            print(
                q.id,
                f"parts={len(parts)} calls={len(calls)} asked={len(q.ground_truth)}",
                f"right={right} shipped={before}",
                json.dumps(parts)[:300],
                flush=True,
            )
    print("tally", tally)


asyncio.run(main())
