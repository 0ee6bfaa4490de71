"""What asking for token alternatives costs: generation speed with and without
`top_logprobs`, on the real llama.cpp server, under the json action grammar.

The prompted engine asks for 5 alternatives per token whenever a reply under `auto` is
held to a grammar (`parlay.engine.checks.confidence`). llama.cpp then sorts the vocabulary for
every token, so this measures the price, side by side in one run: each round sends the
same request twice, once plain and once with alternatives, in alternating order, and
reads the server's own timings (tokens per second of generation).

    python -m bench.alternatives_bench [--rounds 8] [--models smollm2,qwen]

Prints a table and writes bench/results/alternatives.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Any

import httpx

from bench._table import markdown_table, write_result
from bench.bfcl.models import models
from parlay.backends.local import LlamaServer
from parlay.context import UserMessage
from parlay.engine.backend import NAME_ALTERNATIVES
from parlay.engine.contract.constrain import action_response_format
from parlay.engine.policy import TurnPolicy
from parlay.request import AUTO, ChatRequest, GenerationOptions, ToolSpec
from parlay.wire.openai_client import encode_request

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
PROMPT = "Write three sentences about the weather in Paris in spring."


def body(alternatives: int | None, max_tokens: int) -> dict[str, Any]:
    request = ChatRequest(
        (UserMessage(PROMPT),),
        response_format=action_response_format((WEATHER,), TurnPolicy.of_choice(AUTO), "json"),
        options=GenerationOptions(
            temperature=0, max_tokens=max_tokens, seed=0, top_logprobs=alternatives
        ),
    )
    return encode_request(request, model="bench", stream=False)


async def speed(client: httpx.AsyncClient, url: str, payload: dict[str, Any]) -> float:
    response = await client.post(url, json=payload)
    response.raise_for_status()
    return float(response.json()["timings"]["predicted_per_second"])


async def measure(
    rounds: int, keys: tuple[str, ...], threads: int, max_tokens: int
) -> list[list[object]]:
    rows: list[list[object]] = []
    for model in models(keys):
        server = LlamaServer(model.path, n_ctx=4096, threads=threads)
        url = server.start() + "/chat/completions"
        plain, scored = body(None, max_tokens), body(NAME_ALTERNATIVES, max_tokens)
        without: list[float] = []
        with_: list[float] = []
        async with httpx.AsyncClient(timeout=600) as client:
            await speed(client, url, plain)  # warm the prompt cache and the weights
            for round_no in range(rounds):
                pair = [(plain, without), (scored, with_)]
                for payload, into in pair if round_no % 2 == 0 else reversed(pair):
                    into.append(await speed(client, url, payload))
        a, b = statistics.median(without), statistics.median(with_)
        rows.append([model.label, f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}"])
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--models", default="smollm2,qwen")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    rows = asyncio.run(
        measure(args.rounds, tuple(args.models.split(",")), args.threads, args.max_tokens)
    )
    headers = [
        "model",
        "tokens/s plain",
        f"tokens/s with {NAME_ALTERNATIVES} alternatives",
        "ratio",
    ]
    table = markdown_table(headers, rows)
    print(table)
    method = (
        f"{args.rounds} rounds per model, each sending the same request twice (json action "
        f"grammar, temperature 0, {args.max_tokens} tokens at most), plain and with "
        f"`top_logprobs={NAME_ALTERNATIVES}`, in alternating order; medians of llama.cpp's "
        f"own generation timings, {args.threads} threads."
    )
    path = write_result(
        "alternatives",
        "Token alternatives: what they cost on llama.cpp",
        [("Generation speed", table), ("How", method)],
    )
    print(f"written to {path}")


if __name__ == "__main__":
    main()
