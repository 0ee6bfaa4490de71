"""How sure each model is of the tool it names: the evidence behind `min_offered_share`.

For every question of the BFCL samples, the engine's first request (contract, examples
and json action grammar, as `PromptedBackend` renders it under `auto`) is sent once to
the real llama.cpp server with 5 alternatives per token. For a reply that calls, the
share of the alternatives that go on to an offered tool is read at each token of the
tool's name with `parlay.engine.checks.confidence.name_choices` (the least sure token counts),
and the call is judged by the BFCL checker. The table shows how the shares of right
calls, wrong calls and calls where no tool fit spread out, and what each floor would
catch.

    python -m bench.bfcl.name_shares [--seeds 0,1,2,3,4] [--n 10] [--models qwen,smollm2]

Writes bench/results/bfcl-name-shares.json (one row per question) and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table, write_result
from bench.bfcl.checker import check
from bench.bfcl.data import Question, sample
from bench.bfcl.models import Model, models
from bench.bfcl.run import CATEGORIES, RESULTS, question_request
from parlay.backends.base import PLAIN_CHAT
from parlay.backends.local import LlamaServer
from parlay.backends.openai import OpenAIBackend
from parlay.backends.scripted import reply_events
from parlay.engine.backend import NAME_ALTERNATIVES, PromptedBackend
from parlay.engine.checks.confidence import name_choices
from parlay.engine.contract.parser import parse
from parlay.events import Event, ScoredTextDelta, TextDelta, TokenChoice
from parlay.request import ChatRequest

FLOORS = (0.1, 0.25, 0.5, 0.75, 0.9)


class _FirstRequest:
    """Records the engine's first inner request and answers it with nothing."""

    name = "first-request"
    capabilities = PLAIN_CHAT

    def __init__(self) -> None:
        self.request: ChatRequest | None = None

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.request = self.request or request
        for event in reply_events('{"final": {"content": ""}}'):
            yield event


async def first_request(question: Question, max_tokens: int) -> ChatRequest:
    recorder = _FirstRequest()
    request = question_request(question, max_tokens)

    async for _ in PromptedBackend(recorder, max_retries=0).stream(request):
        pass
    assert recorder.request is not None
    return recorder.request


async def ask(backend: OpenAIBackend, question: Question, max_tokens: int) -> dict[str, Any]:
    request = await first_request(question, max_tokens)
    tokens: list[TokenChoice] = []
    text: list[str] = []
    async for event in backend.stream(request):
        if isinstance(event, TextDelta):
            text.append(event.text)
            if isinstance(event, ScoredTextDelta):
                tokens.extend(event.tokens)
    names = [spec.name for spec in question.tools]
    parsed = parse("".join(text), names)
    calls = [(c.name, c.arguments) for c in parsed.calls]
    choices = name_choices(tokens, parsed.calls, names)
    verdict = check(question.category, question.functions, calls, question.ground_truth)
    return {
        "question": question.id,
        "category": question.category,
        "calls": [{"name": name, "arguments": arguments} for name, arguments in calls],
        "right": verdict.valid,
        "shares": [round(c.share, 4) for c in choices],
        "leaning": [c.leaning for c in choices],
        "before": [c.before for c in choices],
    }


async def run_model(
    model: Model, questions: Sequence[Question], max_tokens: int, threads: int
) -> list[dict[str, Any]]:
    server = LlamaServer(model.path, n_ctx=8192, threads=threads)
    await asyncio.to_thread(server.start)
    backend = OpenAIBackend(
        model.key, base_url=server.base_url, api_key="", capabilities=PLAIN_CHAT
    )
    rows = []
    for number, question in enumerate(questions, 1):
        row = await ask(backend, question, max_tokens)
        rows.append(row)
        print(
            f"  [{model.key}] {number}/{len(questions)} {question.id} {row['shares']}", flush=True
        )
    return rows


def kind(row: dict[str, Any]) -> str:
    if row["category"] == "live_irrelevance":
        return "call where no tool fit"
    return "right call" if row["right"] else "wrong call"


def summary(results: dict[str, list[dict[str, Any]]]) -> str:
    headers = ["model", "first replies that call", "lowest share", *(f"below {f}" for f in FLOORS)]
    rows: list[list[object]] = []
    for key, answers in results.items():
        for label in ("right call", "wrong call", "call where no tool fit"):
            shares = [min(r["shares"]) for r in answers if r["shares"] and kind(r) == label]
            if not shares:
                continue
            below = [sum(s < floor for s in shares) for floor in FLOORS]
            rows.append([f"{key}: {label}", len(shares), f"{min(shares):.2f}", *below])
    return markdown_table(headers, rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--models", default="qwen,smollm2")
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "bfcl-name-shares.json")
    parser.add_argument("--merge", nargs="*", type=Path, help="only merge these JSON files")
    args = parser.parse_args(argv)
    if args.merge:
        results: dict[str, list[dict[str, Any]]] = {}
        for path in args.merge:
            results.update(json.loads(path.read_text())["runs"])
    else:
        questions = [
            q
            for seed in map(int, args.seeds.split(","))
            for c in CATEGORIES
            for q in sample(c, args.n, seed)
        ]
        results = {
            model.key: asyncio.run(run_model(model, questions, args.max_tokens, args.threads))
            for model in models(tuple(args.models.split(",")))
        }
    settings = {"seeds": args.seeds, "n": args.n, "alternatives": NAME_ALTERNATIVES}
    args.out.write_text(json.dumps({"settings": settings, "runs": results}, indent=1) + "\n")
    table = summary(results)
    print(table)
    how = (
        f"First replies to BFCL seeds {args.seeds}, {args.n} questions per category "
        f"({', '.join(CATEGORIES)}), temperature 0, json action grammar, "
        f"{NAME_ALTERNATIVES} alternatives per token. A call's share is the lowest over the "
        "tokens of its name, and a reply's the lowest over its calls. 'below f' counts the "
        "replies a floor of f would question."
    )
    write_result(
        args.out.stem,
        "How sure the models are of the tool they name",
        [("Shares", table), ("How", how)],
    )


if __name__ == "__main__":
    main()
