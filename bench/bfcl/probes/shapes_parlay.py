"""Exploratory probe (issue 15, "Several calls"): parlay's contract for Qwen on the first
5 tune-half questions of each parallel category, with its reply shape varied.

    python -m bench.bfcl.probes.shapes_parlay listed|rule|rule-noshot|plan|count|noform

`listed`: the shipped contract with `listed_calls` (every call in `{"actions": [...]}`);
`rule`: plus a rule line asking for one call per thing asked; `rule-noshot`: that without
the few-shot turns; `plan`: a `requests` list before the actions; `count`: a `calls` count
before them (templates in `templates_count/`); `noform`: no grammar. With `format=typed`,
`counted` holds the typed plural form to the count it writes first (templates in
`templates_typed_count/`). `PROBE_N`: questions per category (default 5). Figures in
bench/results/parallel-probe.md. Run under the model lock; tune half only.
"""

import asyncio
import os
import sys
from pathlib import Path

import httpx

from bench.bfcl.models import models
from bench.bfcl.probes.shapes import counted, keyed_grammar, scored, typed_grammar
from bench.bfcl.split import select
from bench.bfcl.systems import Setup, shipped_engine
from parlay.backends._next_attempt import grammar_for
from parlay.backends.local import shared_server
from parlay.contract.render import render_contract
from parlay.request import ChatRequest
from parlay.wire.openai_client import encode_request

[model] = models(("qwen",))
server = shared_server(model.path, 8192)
url = server.start()
qs = [
    q
    for c in os.environ.get(
        "PROBE_CATS", "parallel_multiple,live_parallel,live_parallel_multiple"
    ).split(",")
    for q in select(c, "tune", int(os.environ.get("PROBE_N", "5")))
]
which = sys.argv[1]


async def main() -> None:
    engine = shipped_engine(Setup(model, url, 8192, 512))
    if which == "count":
        engine = engine.configure(template_dir=str(Path(__file__).with_name("templates_count")))
    if which.startswith("templates="):  # any template folder of your own
        engine = engine.configure(template_dir=which.removeprefix("templates="))
    if "noshot" in sys.argv[2:]:
        engine = engine.configure(few_shot=False)
    if "format=typed" in sys.argv[2:]:  # the engine's own typed format and grammar
        engine = engine.configure(action_format="typed")
    if "three" in sys.argv[2:]:  # the two-call example with a third call
        import parlay.contract.render as render
        from parlay.contract.examples import Pair, _varied_example, pair_example

        def three(tools):  # type: ignore[no-untyped-def]
            pair = pair_example(tools)
            if pair is None or len(tools) < 2:  # one tool: its two examples use both values
                return pair
            third = _varied_example(tools[0], 82)
            later = third.request[0].lower() + third.request[1:]
            request = f"{pair.request[:-1]}, and {later}"
            return Pair(request, (*pair.calls, third.call), pair.thought)

        render.pair_example = three
    if "listed" in sys.argv[2:]:
        engine = engine.configure(listed_calls=True)
    async with httpx.AsyncClient(timeout=300) as client:
        wins = 0
        for q in qs:
            req = ChatRequest(q.messages, tools=q.offered_tools, parallel_tool_calls=True)
            contract = render_contract(req, engine.options, constrained=True)
            msgs = list(contract.messages)
            fmt = grammar_for(engine, contract.tools, req)
            body = encode_request(
                req.replace(messages=tuple(msgs), tools=(), response_format=fmt),
                model="m",
                stream=False,
            )
            body.update(temperature=0, max_tokens=400, seed=0)
            if which == "plan":
                # a plan field first: the requests the user made, then the actions
                sch = body["response_format"]["json_schema"]["schema"]
                for opt in sch.get("anyOf", [sch]):
                    if "actions" in opt.get("properties", {}):
                        opt["properties"] = {
                            "requests": {
                                "type": "array",
                                "items": {"type": "string"},
                                "minItems": 1,
                            },
                            **opt["properties"],
                        }
                        opt["required"] = ["requests", "actions"]
                body["messages"][0]["content"] += (
                    '\n\nWhen you call tools, first list in "requests" each separate thing the user asked for, then write one action for each.'
                )
            if which.startswith("rule"):
                body["messages"][0]["content"] = body["messages"][0]["content"].replace(
                    "Rules:\n",
                    'Rules:\n- When the user asks for several things, or for one thing several times, make one call for each, all in one reply: several entries in "actions".\n',
                )
            if which == "rule-noshot":
                body["messages"] = [
                    body["messages"][0],
                    *[m for m in body["messages"][1:]][-len(q.messages) :],
                ]
            if which == "count":
                sch = body["response_format"]["json_schema"]["schema"]
                for opt in sch.get("anyOf", [sch]):
                    if "actions" in opt.get("properties", {}):
                        opt["properties"] = {
                            "calls": {"type": "integer", "minimum": 1, "maximum": 9},
                            **opt["properties"],
                        }
                        opt["required"] = ["calls", "actions"]
            if "typed" in sys.argv[2:]:  # the grammar of the type-first shape
                body["response_format"]["json_schema"]["schema"] = typed_grammar(
                    contract.tools, min_several=2 if "min2" in sys.argv[2:] else 1
                )
            if "keyed" in sys.argv[2:]:  # the grammar of the first-key shape
                body["response_format"]["json_schema"]["schema"] = keyed_grammar(
                    contract.tools, min_several=2 if "min2" in sys.argv[2:] else 1
                )
            if "min2" in sys.argv[2:] and "typed" not in sys.argv[2:]:
                sch = body["response_format"]["json_schema"]["schema"]
                for opt in sch.get("anyOf", [sch]):
                    if "actions" in opt.get("properties", {}):
                        opt["properties"]["actions"]["minItems"] = 2
            if "counted" in sys.argv[2:]:  # typed: a count first, the list held to it
                body["response_format"]["json_schema"]["schema"] = counted(
                    body["response_format"]["json_schema"]["schema"]
                )
            if which == "noform":
                body.pop("response_format", None)
            r = await client.post(url + "/chat/completions", json=body)
            text = r.json()["choices"][0]["message"]["content"]
            valid, _ = scored(q, text)
            wins += valid
        print("right", wins, "of", len(qs))


asyncio.run(main())
