"""Can the model judge its own call? Its yes/no on "does this tool do what the user asked".

A lever looked at in stop 12 for the calls no check catches: Qwen's confident calls where
no tool fits. For every reply of the recorded runs (`bench/results/bfcl*.json`, the row
as parlay ships it) that calls, the model is shown the user's last message, the tool's
description and the call, and asked to answer yes or no; the share of "yes" among its
first-token alternatives is compared across right calls, wrong calls and calls where no
tool fit. A lever only if the groups come apart.

    python -m bench.bfcl.self_check [--model qwen] [--threads 2]

Writes bench/results/bfcl-self-check.json (one row per reply) and .md.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench._table import markdown_table, write_result
from bench.bfcl.data import Question, load_category
from bench.bfcl.models import models
from bench.bfcl.run import CATEGORIES, RESULTS
from parlay.backends.local import LlamaServer

PAGES = ("bfcl", "bfcl-holdout", *(f"bfcl-seed{seed}" for seed in range(2, 8)))
ROW = "parlay json constrained"
ALTERNATIVES = 10
QUESTION = (
    'A user wrote:\n"""{user}"""\n\nAn assistant answered by calling the tool `{name}` '
    "({description}) with the arguments {arguments}.\n\n"
    "Does this tool do what the user asked for, with values the user gave? Answer yes or no."
)


def recorded_calls(model_key: str) -> list[tuple[str, str, Question, dict[str, Any]]]:
    """(page, group, question, first call) for every recorded reply that calls."""
    questions = {q.id: q for c in CATEGORIES for q in load_category(c)}
    out = []
    for page in PAGES:
        path = RESULTS / f"{page}.json"
        if not path.exists():
            continue
        outcomes = json.loads(path.read_text())["runs"].get(model_key, {}).get(ROW, {})
        for qid, outcome in outcomes.items():
            if outcome["calls"]:
                question = questions[qid]
                if not question.expects_call:
                    group = "no tool fit"
                else:
                    group = "right call" if outcome["right"] else "wrong call"
                out.append((page, group, question, outcome["calls"][0]))
    return out


def yes_share(client: httpx.Client, question: Question, call: dict[str, Any]) -> float:
    spec = next((t for t in question.tools if t.name == call["name"]), None)
    user = [m.content for m in question.messages if m.role == "user"][-1]
    prompt = QUESTION.format(
        user=user,
        name=call["name"],
        description=(spec.description if spec else "").strip()[:300],
        arguments=json.dumps(call["arguments"])[:400],
    )
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": ALTERNATIVES,
    }
    reply = client.post("/chat/completions", json=body).raise_for_status().json()
    weights = {"yes": 0.0, "no": 0.0}
    for alternative in reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]:
        word = alternative["token"].strip().lower()
        if word in weights:
            weights[word] += math.exp(alternative["logprob"])
    total = weights["yes"] + weights["no"]
    return weights["yes"] / total if total else math.nan


def summary(rows: list[dict[str, Any]]) -> str:
    table: list[list[object]] = []
    for group in ("right call", "wrong call", "no tool fit"):
        shares = sorted(r["yes"] for r in rows if r["group"] == group)
        if shares:
            middle = shares[len(shares) // 2]
            table.append(
                [group, len(shares), f"{shares[0]:.2f}", f"{middle:.2f}", f"{shares[-1]:.2f}"]
            )
    return markdown_table(["calls", "n", "lowest yes", "median", "highest"], table)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "bfcl-self-check.json")
    args = parser.parse_args(argv)
    [model] = models((args.model,))
    server = LlamaServer(model.path, n_ctx=4096, threads=args.threads)
    server.start()
    rows = []
    with httpx.Client(base_url=server.base_url, timeout=120) as client:
        for page, group, question, call in recorded_calls(model.key):
            share = yes_share(client, question, call)
            rows.append({"page": page, "question": question.id, "group": group, "yes": share})
    args.out.write_text(json.dumps({"model": model.key, "rows": rows}, indent=1) + "\n")
    table = summary(rows)
    print(table)
    how = (
        f"{model.label}, temperature 0, one token, {ALTERNATIVES} alternatives; the share "
        "of 'yes' against 'no' among them. Asked of every reply that called in the rows "
        f"`{ROW}` of the recorded samples ({', '.join(PAGES)}). The question:\n\n"
        + "\n".join("    " + line for line in QUESTION.splitlines())
    )
    write_result(
        args.out.stem, "Can the model judge its own call?", [("Yes shares", table), ("How", how)]
    )


if __name__ == "__main__":
    main()
