"""The one knob, `min_call_confidence`, by value, from first replies:
`python -m bench.bfcl.knob`.

Under `auto` and a grammar, a first reply that calls is asked again for an answer in
words, under the answer-only grammar, when the model was less sure than the knob of
calling (its weight on the kind token, `checks.confidence`) or of every tool it named (the
share of its alternatives at the name's tokens that go on to an offered tool,
`checks.confidence`): it then makes no call. So a question's outcome under any value follows
from its first reply without asking the model again: an abstention where the knob asks
for words (right on live_irrelevance, wrong elsewhere), else its outcome in a full run
of the engine as shipped (`FULL_RUNS`), whose other checks act after the first reply. A
value below the one that run was made at is derived only where the questions it lets call
were asked again at that value (`PATCH_RUNS`); a real run at the rule's value, where one
was made, is shown beside (`CHECK_RUNS`).

`--run` asks each question of a half once, through the engine as shipped for the model
with no retry, and stores the first reply's verdict, name shares and lean (resumable,
one JSON line a question). Without `--run` the page is rendered from the store, with the
value the rule picks from the tune half alone (`best`).

    flock /tmp/parlay-model.lock python -m bench.bfcl.knob --run --half tune
    python -m bench.bfcl.knob
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from bench._table import markdown_table
from bench.bfcl.data import DEV_CATEGORIES, Question
from bench.bfcl.outcome import Reply, judge
from bench.bfcl.split import Half, interleave, select
from bench.bfcl.stats import Share, balanced, cell, run_of
from bench.bfcl.store import rows as stored_rows
from bench.bfcl.systems import Counted, Setup, parlay_system, started
from parlay.backends.base import Backend
from parlay.engine.checks.confidence import name_choices
from parlay.engine.contract.parser import parse
from parlay.events import Event, ScoredTextDelta, TextDelta, TokenChoice
from parlay.request import ChatRequest

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-knob.jsonl"
PAGE = RESULTS / "bfcl-knob.md"
KNOB = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9)
DEV_STORE = RESULTS / "bfcl-dev.jsonl"
# The full runs of the engine as shipped that the derived scores start from, per model and
# half: (system, tag, the lowest value they can be derived for: the knob's reading at the
# time, below which a question the run asked for words would have called).
FULL_RUNS = {
    ("smollm2", "tune"): ("parlay", "stop16", 0.1),
    ("smollm2", "validate"): ("parlay", "issue38", 0.1),
    ("qwen", "tune"): ("parlay:typed", "stop23", 0.5),
    ("qwen", "validate"): ("parlay", "issue38", 0.75),
}
# Full runs at a lower value, of only the questions whose first reply that value lets call
# where the run in `FULL_RUNS` asked it for words: their outcomes stand in for that run's,
# so values from this one on are derived: (system, tag, value).
PATCH_RUNS = {
    ("qwen", "validate"): ("parlay:knob70", "issue38knob", 0.7),
}
# Real runs of the engine with the knob at the rule's value, which the derived figures are
# checked against: (system, tag, the value it ran at).
CHECK_RUNS = {
    ("smollm2", "validate"): ("parlay", "issue38knob", 0.5),
}
Row = dict[str, Any]


class FirstReply(Counted):
    """The engine's inner backend, keeping the text and token alternatives it streams."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.text: list[str] = []
        self.tokens: list[TokenChoice] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests += 1
        async for event in self.inner.stream(request):
            if isinstance(event, TextDelta):
                self.text.append(event.text)
            if isinstance(event, ScoredTextDelta):
                self.tokens.extend(event.tokens)
            yield event


async def ask(setup: Setup, question: Question) -> Row:
    """One first reply: its verdict as BFCL judges it, and the share of each call's name."""
    system = parlay_system(setup, kwargs={"max_retries": 0, "min_call_confidence": 1e-9})
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
    setup = await started(key, tag="share-knob")
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
    return stored_rows(store)


def asked_for_words(row: Row, confidence: float) -> bool:
    """Whether `min_call_confidence` at `confidence` asks this first reply for words: it
    calls, and the model was less sure of calling (kind token) or of every tool it named."""
    if not row["calls"] or not confidence:
        return False
    shares, answering = row["shares"], row["answer_share"]
    forced = len(shares) == row["calls"] and max(shares) < confidence
    return forced or (answering is not None and answering >= 1 - confidence)


def right_under(row: Row, confidence: float, stored: Row) -> bool:
    """The question's rightness with the knob at `confidence`: an abstention where it
    asks the first reply for words, else the full run's outcome (`stored`)."""
    if asked_for_words(row, confidence):
        return bool(row["category"] == "live_irrelevance")
    return bool(stored["right"])


class FullRun(NamedTuple):
    """A full run's outcomes by question as it ran, the outcomes values are derived from
    (its `PATCH_RUNS` in), and the lowest value they can be derived for."""

    ran: dict[str, Row]
    outcomes: dict[str, Row]
    lowest: float


def full_run(dev: Sequence[Row], model: str, half: str) -> FullRun:
    """The full run of `FULL_RUNS` and its patch, from the dev store's rows."""
    system, tag, lowest = FULL_RUNS[(model, half)]
    ran = run_of(dev, model, half, system, tag)
    if (patch := PATCH_RUNS.get((model, half))) is None:
        return FullRun(ran, ran, lowest)
    system, tag, lowest = patch
    return FullRun(ran, ran | run_of(dev, model, half, system, tag), lowest)


class CheckRun(NamedTuple):
    """A real run at the rule's value (`CHECK_RUNS`): its outcomes by question."""

    outcomes: dict[str, Row]
    tag: str
    value: float

    @property
    def label(self) -> str:
        return f"run at {self.value:g} ({self.tag})"

    def cells(self, asked: Sequence[Row], full: dict[str, Row]) -> list[object]:
        """Its own outcomes, on the questions the derived rows score."""
        return _run_cells(self.outcomes, asked, full)

    def agreement(self, half: str, asked: Sequence[Row], full: dict[str, Row]) -> str:
        """How often the outcome derived at its value is the run's own."""
        both = [r for r in asked if r["question"] in full.keys() & self.outcomes.keys()]
        same = sum(
            right_under(r, self.value, full[r["question"]]) == self.outcomes[r["question"]]["right"]
            for r in both
        )
        return (
            f"Derived against the {self.label}, {half} half: the same outcome for {same} of "
            f"{len(both)} questions."
        )


def check_run(dev: Sequence[Row], model: str, half: str) -> CheckRun | None:
    if (found := CHECK_RUNS.get((model, half))) is None:
        return None
    system, tag, value = found
    return CheckRun(run_of(dev, model, half, system, tag), tag, value)


def _questions(asked: Sequence[Row], full: dict[str, Row]) -> list[str]:
    return [r["question"] for r in asked if r["question"] in full]


def _cells(calls: Share, irrelevance: Share, score: Share) -> list[object]:
    return [cell(score), f"{100 * calls.value:.1f}", f"{100 * irrelevance.value:.1f}"]


def _run_cells(run: dict[str, Row], asked: Sequence[Row], full: dict[str, Row]) -> list[object]:
    """A run's own outcomes, on the questions the derived rows score."""
    same = [run[q] for q in _questions(asked, full) if q in run]
    return _cells(*balanced(same)) if same else ["—"] * 3


def scores(rows: Sequence[Row], full: dict[str, Row], value: float) -> tuple[Share, ...]:
    """Calls right, live_irrelevance right and balanced, on the questions of both."""
    asked = [r for r in rows if r["question"] in full]
    return balanced(asked, lambda r: right_under(r, value, full[r["question"]]))


def best(rows: Sequence[Row], full: dict[str, Row], lowest: float) -> float:
    """The rule: the value with the best balanced score on the tune half (ties: the lower
    value, which keeps more calls)."""
    values = [v for v in KNOB if v >= lowest]
    return max(values, key=lambda v: (scores(rows, full, v)[2].value, -v))


def section(model: str, rows: Sequence[Row], dev: Sequence[Row]) -> list[str]:
    halves = ("tune", "validate")
    checks = {h: c for h in halves if (c := check_run(dev, model, h)) is not None}
    table: list[list[object]] = [[f"{v:g}"] for v in KNOB]
    table.append(["as the full run ran"])
    table.extend([c.label] for c in checks.values())
    counts, agreement = [], []
    runs = {half: full_run(dev, model, half) for half in halves}
    for half, (ran, full, lowest) in runs.items():
        asked = [r for r in rows if r["half"] == half]
        counts.append(f"{half} n={len(_questions(asked, full))}")
        for line, value in zip(table, KNOB, strict=False):
            derived = bool(asked) and value >= lowest
            line += _cells(*scores(asked, full, value)) if derived else ["—"] * 3
        table[len(KNOB)] += _run_cells(ran, asked, full)  # the full run as it ran
        for line, (checked, run) in zip(table[len(KNOB) + 1 :], checks.items(), strict=True):
            line += run.cells(asked, full) if checked == half else ["—"] * 3
        if half in checks:
            agreement += [checks[half].agreement(half, asked, full), ""]
    header = ["min_call_confidence"] + [
        f"{half} {what}" for half in ("tune", "validate")
        for what in ("balanced (95 %)", "calls right", "irrelevance right")
    ]  # fmt: skip
    lines = [f"## {model} ({', '.join(counts)})", "", markdown_table(header, table), ""]
    lines += agreement
    _, full, lowest = runs["tune"]
    if tune := [r for r in rows if r["half"] == "tune" and r["question"] in full]:
        choice = best(tune, full, lowest)
        lines.append(f"The rule's choice, from {len(tune)} tune questions alone: {choice:g}.")
    return [*lines, ""]


def render(rows: Sequence[Row]) -> str:
    lines = ["# The knob: how sure a model must be to call, by value", ""]
    lines += [" ".join((__doc__ or "").split("\n\n")[1].split()), ""]
    dev = load(DEV_STORE)
    for model in sorted({r["model"] for r in rows}):
        lines += section(model, [r for r in rows if r["model"] == model], dev)
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
