"""The turn after a tool result, measured: `python -m bench.bfcl.after`.

The continuations of `bench.bfcl.after_result`, asked of parlay's engine in each format
and of llama.cpp's own tools, on one llama.cpp server per model, every system on a
continuation before the next. Outcomes go to their own JSON-lines store as they come
(`bench.bfcl.store`, keyed as the development benchmark's), so a run resumes where it
stopped. The naive prompt and toolproxy are not asked: neither has a way to show a tool
result to the model that is theirs rather than ours.

    flock /tmp/parlay-model.lock nice -n 5 python -m bench.bfcl.after \\
        --models qwen --half tune --per-category 8
    python -m bench.bfcl.after --report --tag stop25,stop25b   # the page, nothing run

With several engine tags (oldest first) each system shows its newest complete run;
without `--tag`, every outcome of every tag counts.

The page pairs each engine variant with the shipped engine on the same continuations:
right, ended, repeated, carried and empty, with 95 % Wilson intervals.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._table import markdown_table
from bench.bfcl.ablation_report import gain, gain_cell, interval
from bench.bfcl.after_result import Continuation, continuations, parrots, record
from bench.bfcl.dev import current, halves
from bench.bfcl.runner import Asking, run
from bench.bfcl.split import HALVES
from bench.bfcl.stats import Share, mean, wilson
from bench.bfcl.store import Store, config_key, head_commit
from bench.bfcl.systems import System, build, started

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-after.jsonl"
SYSTEMS = ("parlay", "parlay:typed", "llama.cpp")
MEASURES = ("right", "ended", "repeated", "carried", "empty", "parroted")
Outcome = dict[str, Any]
CONTINUATIONS: Asking[Continuation] = Asking(lambda c: c.question, lambda c: c.id, record)


def touched(outcome: Outcome, unless: str) -> bool:
    """Whether a change could have acted on `outcome`: `unless` names, comma-separated,
    rules the run recorded acting or verdicts on its reply (`repeated`, `parroted`:
    what the guards of stop 26 act on)."""
    acted = {*outcome.get("retries", ()), *outcome.get("rules", ())}
    acted |= {m for m in ("repeated", "empty") if outcome.get(m)}
    if parrots(outcome["text"]):
        acted.add("parroted")
    return any(name.strip() in acted for name in unless.split(","))


def derive(
    model: str,
    systems: Sequence[System],
    store: Store,
    earlier_tag: str,
    unless_rule: str,
) -> int:
    """Copy each engine outcome of `earlier_tag` on which `unless_rule` did not act to
    the systems' own tag, marked `derived`: with greedy decoding a rule that did not act
    cannot change the reply (the ablation's shortcut). An outcome the earlier tag had
    itself copied is copied on: it is the reply of the run it came from. How many were
    copied."""
    done = store.load()
    earlier = {
        (o["system"], o["category"], o["question"]): o
        for o in done.values()
        if o["model"] == model and o.get("tag") == earlier_tag
    }
    copied = 0
    for system in systems:
        if not system.name.startswith("parlay"):
            continue
        config = config_key(system.config)
        tag = system.config.get("tag", "")
        for (name, category, question), old in earlier.items():
            where = (model, name, category, question, config)
            if name != system.name or touched(old, unless_rule) or where in done:
                continue
            store.append({**old, "config": config, "tag": tag, "derived": True})
            copied += 1
    return copied


async def run_model(args: argparse.Namespace, key: str, store: Store) -> None:
    baseline_tag = args.baseline_tag or args.tag
    setup = await started(key, 0, args.max_tokens, tag=args.tag, baseline_tag=baseline_tag)
    systems = build(args.systems.split(","), setup)
    if args.derive_from:
        copied = derive(key, systems, store, args.derive_from, args.unless_rule)
        print(
            f"copied {copied} outcomes of {args.derive_from} where {args.unless_rule} did not act"
        )
    for half in halves(args.half):
        items = continuations(half, args.per_category or None)
        print(f"{key}, {half} half: {len(items)} continuations x {len(systems)} systems")
        progress = await run(key, systems, items, store, asking=CONTINUATIONS, commit=head_commit())
        print(f"  asked {progress.asked}, already done {progress.skipped}")


def share(rows: Sequence[Outcome], measure: str = "right") -> Share:
    return wilson(sum(bool(r[measure]) for r in rows), len(rows))


def common_rows(rows: Sequence[Outcome], stage: str) -> dict[str, list[Outcome]]:
    """Each system's outcomes of one stage, on the continuations every system answered."""
    mine = [r for r in rows if r["stage"] == stage]
    systems = sorted({r["system"] for r in mine}, key=lambda s: (s != "parlay", s))
    asked = [{r["question"] for r in mine if r["system"] == s} for s in systems]
    common = set.intersection(*asked) if asked else set()
    return {
        system: [r for r in mine if r["system"] == system and r["question"] in common]
        for system in systems
    }


def section(rows: Sequence[Outcome], stage: str) -> list[str]:
    """One table: a row per system, on the continuations every system answered."""
    by_system = common_rows(rows, stage)
    table = [[s, len(c), *(share(c, m).render() for m in MEASURES)] for s, c in by_system.items()]
    n = len(next(iter(by_system.values()), []))
    header = ["system", "n", *MEASURES]
    return [f"Stage `{stage}`, {n} continuations:", "", markdown_table(header, table)]


def balanced_section(rows: Sequence[Outcome]) -> list[str]:
    """Both stages at once: the mean of their right shares, as the dev page's balance
    of calls and abstentions (ending is right in one stage, calling in the other), and
    each system's gain over the shipped engine, paired continuation by continuation
    (95 % paired bootstrap, `bench.bfcl.ablation_report`)."""
    ended, going_on = common_rows(rows, "all"), common_rows(rows, "some")
    table: list[list[object]] = []
    for system in ended:
        first, second = share(ended[system]), share(going_on.get(system, []))
        shares = (s.render() for s in (first, second, mean(first, second)))
        table.append([system, *shares, _paired_gain(system, ended, going_on)])
    header = ["system", "right, `all`", "right, `some`", "balanced", "gain over parlay, paired"]
    return ["Both stages:", "", markdown_table(header, table)]


def _paired_gain(
    system: str, ended: dict[str, list[Outcome]], going_on: dict[str, list[Outcome]]
) -> str:
    if system == "parlay" or "parlay" not in ended:
        return "–"

    def pairs(stage: dict[str, list[Outcome]]) -> list[tuple[bool, bool]]:
        shipped = {r["question"]: r["right"] for r in stage.get("parlay", [])}
        return [
            (bool(r["right"]), bool(shipped[r["question"]]))
            for r in stage.get(system, [])
            if r["question"] in shipped
        ]

    first, second = pairs(ended), pairs(going_on)
    low, high = interval(first, second)
    return gain_cell(100 * gain(first, second), low, high)


def render(outcomes: Sequence[Outcome], tag: str) -> str:
    lines = [
        "# The turn after a tool result",
        "",
        "Made by `python -m bench.bfcl.after` from `bench/results/bfcl-after.jsonl`"
        f"{f' (tags {tag}: each system its newest complete run)' if tag else ''}.",
        "Stage `all`: every call made and answered, right is an answer carrying every",
        "result; stage `some`: one of several calls made, right",
        "is a call to a function still to call, not the same call again. Shares with",
        "their 95 % Wilson intervals, on the continuations every system answered.",
        "`parlay` is the engine as shipped at the run's tag: for Qwen the json format up",
        "to stop26c, the typed format after it (then `parlay:json` is the json format).",
    ]
    # Several tags, oldest first: each engine column its newest tag's complete run.
    chosen = [{**o, "parroted": parrots(o["text"])} for o in current(outcomes, tag)]
    for model in sorted({o["model"] for o in chosen}):
        for half in HALVES:
            rows = [o for o in chosen if o["model"] == model and o["half"] == half]
            if rows:
                lines += ["", f"## {model}, {half} half", ""]
                for stage in ("all", "some"):
                    lines += [*section(rows, stage), ""]
                lines += [*balanced_section(rows), ""]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add = parser.add_argument
    add("--models", default="qwen", help="comma-separated: smollm2,qwen")
    add("--half", default="tune", help="tune, validate or both")
    add("--per-category", type=int, default=8, help="questions a category")
    add("--systems", default=",".join(SYSTEMS))
    add("--max-tokens", type=int, default=512, help="llama.cpp's budget")
    add("--tag", default="", help="a label in the config key")
    add(
        "--baseline-tag", default="", help="llama.cpp's label (default: --tag), kept across engines"
    )
    add("--derive-from", default="", help="an earlier engine tag to copy from")
    add("--unless-rule", default="repeated_call",
        help="with --derive-from: ask where these acted (comma-separated; `parroted`: the reply)")  # fmt: skip
    add("--store", type=Path, default=STORE)
    add("--page", type=Path, help="default: the store's .md")
    add("--report", action="store_true", help="rebuild the page, run nothing")
    args = parser.parse_args(argv)
    store = Store(args.store)
    if not args.report:
        for key in args.models.split(","):
            asyncio.run(run_model(args, key.strip(), store))
    text = render(list(store.load().values()), args.tag)
    page = args.page or args.store.with_suffix(".md")
    page.write_text(text)
    print(text)
    print(f"page: {page}", file=sys.stderr)


if __name__ == "__main__":
    main()
