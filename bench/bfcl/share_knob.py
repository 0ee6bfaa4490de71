"""The floor on the model's share for the tool it names, calibrated on a half:
`python -m bench.bfcl.share_knob`.

Under `auto` and a grammar, a first reply whose every call names its tool with less than
`min_offered_share` of the model's alternatives (`checks.forced`) is asked again for an
answer in words, under the answer-only grammar: it makes no call. So the outcome of a
first reply under any floor follows from the reply and its shares, without asking the
model again: below the floor it is an abstention (right on live_irrelevance, wrong
elsewhere), otherwise it keeps its own verdict.

`--run` asks each question of a half once, through the engine as shipped for the model
with no retry, and stores the first reply's verdict and name shares (resumable, one
JSON line a question). Without `--run` the page is rendered from the store: each floor's
balanced score on both halves from first replies, and the floor the rule picks from the
tune half alone.

    flock /tmp/parlay-model.lock python -m bench.bfcl.share_knob --run --half tune
    python -m bench.bfcl.share_knob
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table
from bench.bfcl.data import DEV_CATEGORIES, Question
from bench.bfcl.dev import N_CTX
from bench.bfcl.models import models
from bench.bfcl.outcome import Reply, judge
from bench.bfcl.pages import balanced, cell
from bench.bfcl.split import Half, interleave, select
from bench.bfcl.systems import Setup, parlay_system
from parlay.backends.base import Backend, Capabilities
from parlay.backends.local import shared_server
from parlay.engine.checks.forced import name_choices
from parlay.engine.contract.parser import parse
from parlay.events import Event, ScoredTextDelta, TextDelta, TokenChoice
from parlay.request import ChatRequest

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-share-knob.jsonl"
PAGE = RESULTS / "bfcl-share-knob.md"
FLOORS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
Row = dict[str, Any]


class FirstReply:
    """The engine's inner backend, keeping the text and token alternatives it streams."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.text: list[str] = []
        self.tokens: list[TokenChoice] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        async for event in self.inner.stream(request):
            if isinstance(event, TextDelta):
                self.text.append(event.text)
            if isinstance(event, ScoredTextDelta):
                self.tokens.extend(event.tokens)
            yield event


async def ask(setup: Setup, question: Question) -> Row:
    """One first reply: its verdict as BFCL judges it, and the share of each call's name."""
    system = parlay_system(setup, kwargs={"max_retries": 0, "min_offered_share": 1e-9})
    tap = FirstReply(system.backend.inner)  # type: ignore[attr-defined]
    system.backend.inner = tap  # type: ignore[attr-defined]
    reply = await system.answer(question)
    names = [spec.name for spec in question.offered_tools]
    parsed = parse("".join(tap.text), names)
    calls = tuple((call.name, call.arguments) for call in parsed.calls)
    choices = name_choices(tap.tokens, parsed.calls, names)
    return {
        "model": setup.model.key,
        "question": question.id,
        "category": question.category,
        **judge(question, Reply(calls, "".join(tap.text))),
        "calls": len(calls),
        "shares": [round(choice.share, 4) for choice in choices],
        "answer_share": reply.answer_share,
    }


async def run(key: str, half: Half, per_category: int, store: Path) -> None:
    [model] = models((key,))
    server = shared_server(model.path, N_CTX[key])
    base_url = await asyncio.to_thread(server.start)
    setup = Setup(model, base_url, N_CTX[key], 512, "share-knob")
    done = {(r["model"], r["question"]) for r in load(store)}
    questions = interleave([select(c, half, per_category) for c in DEV_CATEGORIES])
    for number, question in enumerate(questions, 1):
        if (key, question.id) in done:
            continue
        row = {**await ask(setup, question), "half": half}
        with store.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(f"  {number}/{len(questions)} {question.id} {row['right']} {row['shares']}")


def load(store: Path) -> list[Row]:
    if not store.exists():
        return []
    return [json.loads(line) for line in store.read_text().splitlines() if line.strip()]


def right_under(row: Row, floor: float) -> bool:
    """The first reply's rightness with `min_offered_share` at `floor`."""
    shares = row["shares"]
    forced = row["calls"] and len(shares) == row["calls"] and max(shares) < floor
    return row["category"] == "live_irrelevance" if forced else bool(row["right"])


def best(rows: Sequence[Row]) -> float:
    """The rule: the floor with the best balanced score (ties: the lower floor, which
    takes fewer calls)."""
    return max(FLOORS, key=lambda f: (balanced(rows, lambda r: right_under(r, f))[2].value, -f))


def section(model: str, halves: dict[str, list[Row]]) -> list[str]:
    table = []
    for floor in FLOORS:
        line = [f"{floor:.1f}"]
        for half in ("tune", "validate"):
            calls, irrelevance, score = balanced(halves[half], lambda r: right_under(r, floor))
            line += [cell(score), f"{100 * calls.value:.1f}", f"{100 * irrelevance.value:.1f}"]
        table.append(line)
    header = ["min_offered_share"] + [
        f"{half} {what}" for half in ("tune", "validate")
        for what in ("balanced (95 %)", "calls right", "irrelevance right")
    ]  # fmt: skip
    lines = [f"## {model} (tune n={len(halves['tune'])}, validate n={len(halves['validate'])})"]
    lines += ["", markdown_table(header, table), ""]
    if halves["tune"]:
        chosen = best(halves["tune"])
        lines.append(f"Best on the tune half: min_offered_share {chosen:.1f}.")
    return [*lines, ""]


def render(rows: Sequence[Row]) -> str:
    lines = ["# The name-share floor: calls against abstentions, from first replies", ""]
    lines += [(__doc__ or "").split("\n\n")[1].replace("\n", " "), ""]
    for model in sorted({r["model"] for r in rows}):
        halves = {h: [r for r in rows if r["model"] == model and r["half"] == h] for h in ("tune", "validate")}
        lines += section(model, halves)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--models", default="smollm2")
    parser.add_argument("--half", default="tune")
    parser.add_argument("--per-category", type=int, default=40)
    parser.add_argument("--store", type=Path, default=STORE)
    args = parser.parse_args(argv)
    if args.run:
        for key in args.models.split(","):
            asyncio.run(run(key, args.half, args.per_category, args.store))
    text = render(load(args.store))
    PAGE.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
