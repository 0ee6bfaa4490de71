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
from typing import Any

import httpx

from bench.bfcl.data import Question
from bench.bfcl.models import models
from bench.bfcl.probes.shapes import counted, keyed_grammar, scored, typed_grammar
from bench.bfcl.split import select
from bench.bfcl.systems import Setup, shipped_engine
from parlay.backends.local import shared_server
from parlay.engine.backend import PromptedBackend
from parlay.engine.contract.render import Contract, render_contract
from parlay.engine.next_attempt import grammar_for
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
flags = sys.argv[2:]

PLAN_LINE = '\n\nWhen you call tools, first list in "requests" each separate thing the user asked for, then write one action for each.'
SEVERAL_CALLS_RULE = 'Rules:\n- When the user asks for several things, or for one thing several times, make one call for each, all in one reply: several entries in "actions".\n'


def use_three_call_example() -> None:
    """The two-call example of the contract gains a third call (one tool: left as it is)."""
    import parlay.engine.contract.render as render
    from parlay.engine.contract.examples import Pair, _varied_example, pair_example

    def three(tools):  # type: ignore[no-untyped-def]
        pair = pair_example(tools)
        if pair is None or len(tools) < 2:  # one tool: its two examples use both values
            return pair
        third = _varied_example(tools[0], 82)
        later = third.request[0].lower() + third.request[1:]
        request = f"{pair.request[:-1]}, and {later}"
        return Pair(request, (*pair.calls, third.call), pair.thought)

    render.pair_example = three


def probed_engine() -> PromptedBackend:
    """The shipped engine with the options the command line names."""
    engine = shipped_engine(Setup(model, url, 8192, 512))
    if which == "count":
        engine = engine.configure(template_dir=str(Path(__file__).with_name("templates_count")))
    if which.startswith("templates="):  # any template folder of your own
        engine = engine.configure(template_dir=which.removeprefix("templates="))
    if "noshot" in flags:
        engine = engine.configure(few_shot=False)
    if "format=typed" in flags:  # the engine's own typed format and grammar
        engine = engine.configure(action_format="typed")
    if "three" in flags:  # the two-call example with a third call
        use_three_call_example()
    if "listed" in flags:
        engine = engine.configure(listed_calls=True)
    return engine


def request_body(engine: PromptedBackend, q: Question) -> tuple[dict[str, Any], Contract]:
    """What the engine would send llama.cpp for `q`, greedy: the body, and its contract."""
    req = ChatRequest(q.messages, tools=q.offered_tools, parallel_tool_calls=True)
    contract = render_contract(req, engine.options, constrained=True)
    msgs = list(contract.messages)
    fmt = grammar_for(engine.settings, contract.tools, req)
    body = encode_request(
        req.replace(messages=tuple(msgs), tools=(), response_format=fmt),
        model="m",
        stream=False,
    )
    body.update(temperature=0, max_tokens=400, seed=0)
    return body, contract


def action_shapes(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply shapes of the body's grammar that hold the actions."""
    sch = body["response_format"]["json_schema"]["schema"]
    return [opt for opt in sch.get("anyOf", [sch]) if "actions" in opt.get("properties", {})]


def lead_actions_with(body: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    """A field the reply writes before its actions."""
    for opt in action_shapes(body):
        opt["properties"] = {name: schema, **opt["properties"]}
        opt["required"] = [name, "actions"]


def reshape(body: dict[str, Any], q: Question, contract: Contract) -> None:
    """The reply shape the command line asks for, in the request body."""
    if which == "plan":
        # a plan field first: the requests the user made, then the actions
        plan = {"type": "array", "items": {"type": "string"}, "minItems": 1}
        lead_actions_with(body, "requests", plan)
        body["messages"][0]["content"] += PLAN_LINE
    if which.startswith("rule"):
        body["messages"][0]["content"] = body["messages"][0]["content"].replace(
            "Rules:\n", SEVERAL_CALLS_RULE
        )
    if which == "rule-noshot":
        body["messages"] = [
            body["messages"][0],
            *[m for m in body["messages"][1:]][-len(q.messages) :],
        ]
    if which == "count":
        lead_actions_with(body, "calls", {"type": "integer", "minimum": 1, "maximum": 9})
    if "typed" in flags:  # the grammar of the type-first shape
        body["response_format"]["json_schema"]["schema"] = typed_grammar(
            contract.tools, min_several=2 if "min2" in flags else 1
        )
    if "keyed" in flags:  # the grammar of the first-key shape
        body["response_format"]["json_schema"]["schema"] = keyed_grammar(
            contract.tools, min_several=2 if "min2" in flags else 1
        )
    if "min2" in flags and "typed" not in flags:
        for opt in action_shapes(body):
            opt["properties"]["actions"]["minItems"] = 2
    if "counted" in flags:  # typed: a count first, the list held to it
        body["response_format"]["json_schema"]["schema"] = counted(
            body["response_format"]["json_schema"]["schema"]
        )
    if which == "noform":
        body.pop("response_format", None)


async def main() -> None:
    engine = probed_engine()
    async with httpx.AsyncClient(timeout=300) as client:
        wins = 0
        for q in qs:
            body, contract = request_body(engine, q)
            reshape(body, q, contract)
            r = await client.post(url + "/chat/completions", json=body)
            text = r.json()["choices"][0]["message"]["content"]
            valid, _ = scored(q, text)
            wins += valid
        print("right", wins, "of", len(qs))


asyncio.run(main())
