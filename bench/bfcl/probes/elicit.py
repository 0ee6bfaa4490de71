"""Exploratory probe (issue 15, "Several calls"): ask for the calls one at a time.

The model writes its first reply as usual; while it calls a tool, the engine answers
"noted, the result comes later; if the user asked for more, make the next call" and
collects the calls, which then go out together as one reply's parallel calls.

    python -m bench.bfcl.probes.elicit CATEGORY[,CATEGORY] [N] [wording]

Tune half only; run under the model lock.
"""

import asyncio
import json
import sys
from typing import Any

import httpx

from bench.bfcl.checker import check
from bench.bfcl.models import models
from bench.bfcl.probes.shapes import calls_in
from bench.bfcl.split import select
from bench.bfcl.systems import Setup, shipped_engine
from parlay.backends.local import shared_server
from parlay.engine.contract.render import render_contract
from parlay.engine.next_attempt import grammar_for
from parlay.request import ChatRequest
from parlay.wire.openai_client import encode_request

NUDGES = {
    "noted": (
        "{names} will run; the result comes later. If the user also asked for something "
        "else a tool can do, make the next call now. Otherwise reply "
        '{{"final": {{"content": "done"}}}}.'
    ),
    "more": (
        "Calls so far: {names}. Is there another call the user's message asks for? "
        'If yes, write it now; if every request is covered, reply {{"final": {{"content": "done"}}}}.'
    ),
}

[model] = models(("qwen",))
server = shared_server(model.path, 8192)
url = server.start()
cats = sys.argv[1].split(",")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
wording = NUDGES[sys.argv[3] if len(sys.argv) > 3 else "noted"]
qs = [q for c in cats for q in select(c, "tune", n)]


async def ask(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    r = await client.post(url + "/chat/completions", json=body)
    return r.json()["choices"][0]["message"]["content"]


async def main() -> None:
    engine = shipped_engine(Setup(model, url, 8192, 512))
    wins = 0
    async with httpx.AsyncClient(timeout=300) as client:
        for q in qs:
            req = ChatRequest(q.messages, tools=q.offered_tools, parallel_tool_calls=True)
            contract = render_contract(req, engine.options, constrained=True)
            fmt = grammar_for(engine.settings, contract.tools, req)
            body = encode_request(
                req.replace(messages=contract.messages, tools=(), response_format=fmt),
                model="m",
                stream=False,
            )
            body.update(temperature=0, max_tokens=400, seed=0)
            calls: list = []
            for _ in range(6):
                text = await ask(client, body)
                got = calls_in(text)
                print("   >", text[:160].replace("\n", " "))
                fresh = [c for c in got if c not in calls]
                if not fresh:
                    break
                calls.extend(fresh)
                names = ", ".join(name for name, _ in calls)
                body["messages"] += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": wording.format(names=names)},
                ]
            valid = check(q.category, q.functions, calls, q.ground_truth).valid
            wins += valid
            print(q.id, len(calls), "expected", len(q.ground_truth), valid, json.dumps(calls)[:200])
    print("right", wins, "of", len(qs))


asyncio.run(main())
