"""The engine with one rule switched off at a time, on the questions the rule acted on.

Decoding is greedy, so the engine's path through a question is fixed by what the model
writes and by the rules that act on it. A rule that did not act on a question (it is not
in the outcome's `rules`, `Diagnostics.rules`) cannot change that question when it is
switched off: the outcome is the shipped engine's own, copied with `"derived": true`.
Only the questions the rule acted on are asked again, with `rules_off=[rule]`. A run
reads the shipped engine's outcomes of the same tag from the dev store (`bench.bfcl.dev`
writes them) and writes its own to `bench/results/bfcl-ablation.jsonl`.

The shortcut rests on greedy decoding being repeatable; `--verify N` asks N questions
again of the shipped engine and counts the replies that came out the same (the page
shows it).

`--base SYSTEM` takes the shipped engine's outcomes from another system of the dev
store with the same tag, for a default that was measured as a variant before it shipped
(the typed format: `parlay:typed`, tag `stop23`). They are copied into the ablation
store as `parlay`'s, marked `"adopted_from"`; `--verify` then asks some of them again of
the engine as it ships now, which is what says the copy stands for it.

    flock /tmp/parlay-model.lock nice -n 5 python -m bench.bfcl.ablation \\
        --models qwen --half validate --per-category 40 --tag stop14 --verify 10
    python -m bench.bfcl.ablation --report   # bench/results/bfcl-ablation.md
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.ablation_report import render_ablation
from bench.bfcl.data import Question
from bench.bfcl.dev import NO_PROMPT_CACHE, STORE, categories, halves
from bench.bfcl.runner import answer, key, outcome_of
from bench.bfcl.split import interleave, select
from bench.bfcl.store import Key, Store, head_commit
from bench.bfcl.systems import BackendSystem, Setup, parlay_system, started
from parlay.engine.checks.rules import GUARDS, RULES

ABLATION_STORE = STORE.with_name("bfcl-ablation.jsonl")
Outcome = Mapping[str, Any]
Stores = tuple[Store, Store]  # the dev store (read) and the ablation store (written)
# Every rule that is not a guard, switched off at once: what the heuristics add together.
HEURISTICS = "heuristics"


def ablated(setup: Setup, rule: str) -> BackendSystem:
    """The engine without `rule`: one name, or several joined by `+`, or `heuristics`
    (every rule but the guards)."""
    return parlay_system(setup, f"no-{rule}", {"rules_off": sorted(members(rule))})


def members(rule: str) -> set[str]:
    if rule == HEURISTICS:
        return set(RULES) - GUARDS
    return set(rule.split("+"))


def derived(
    default: Mapping[str, Any], system: BackendSystem, config: str, tag: str
) -> dict[str, Any]:
    """The shipped engine's outcome, as the ablated engine's: the rule never acted. It
    goes under the ablated engine's tag, which may be later than the outcome's."""
    return {**default, "system": system.name, "config": config, "tag": tag, "derived": True}


def shipped_outcomes(stores: Stores) -> dict[Key, dict[str, Any]]:
    """The shipped engine's outcomes: the dev store's, and those adopted from a variant
    into the ablation store (`adopt`)."""
    adopted = {k: o for k, o in stores[1].load().items() if o["system"] == "parlay"}
    return {**stores[0].load(), **adopted}


def adopt(
    model: str, setup: Setup, base: str, questions: Sequence[Question], stores: Stores
) -> int:
    """Copy `base`'s outcomes of this tag into the ablation store as the shipped engine's
    (see the module's text); returns how many were copied."""
    rows, wanted = stores[0].load().values(), (model, base, setup.tag)
    found = {o["question"]: o for o in rows if (o["model"], o["system"], o.get("tag")) == wanted}
    done = stores[1].load()
    copied = 0
    for question in questions:
        where = key(model, parlay_system(setup), question)
        if where in done or question.id not in found:
            continue
        stores[1].append(
            {**found[question.id], "system": "parlay", "config": where[4], "adopted_from": base}
        )
        copied += 1
    return copied


async def ablate_rule(
    model: str, setup: Setup, rule: str, questions: Sequence[Question], stores: Stores
) -> tuple[int, int, int]:
    """The engine without `rule`, on each question not in the ablation store yet: the
    shipped engine's outcome copied where the rule did not act on it, else asked again.
    `stores`: the dev store (read) and the ablation store (written). Returns (asked,
    derived, missing a default)."""
    shipped = key(model, parlay_system(setup), questions[0])[4] if questions else ""
    defaults, store = shipped_outcomes(stores), stores[1]
    system, done = ablated(setup, rule), store.load()
    asked = copied = missing = 0
    for question in questions:
        where = key(model, system, question)
        if where in done:
            continue
        default = defaults.get((model, "parlay", question.category, question.id, shipped))
        if default is None or "rules" not in default:
            missing += 1
            continue
        if members(rule) & set(default["rules"]):
            reply = await answer(system, question)
            outcome = outcome_of(question, reply, where, commit=head_commit(), tag=setup.tag)
            mark = "ok" if outcome["right"] else "--"
            print(f"  [{model} / {system.name}] {mark} {question.id} {reply.seconds:.1f}s")
            asked += 1
        else:
            outcome = derived(default, system, where[4], setup.tag)
            copied += 1
        store.append(outcome)
        done[where] = outcome
    return asked, copied, missing


async def verify(
    model: str, setup: Setup, questions: Sequence[Question], stores: Stores, count: int
) -> None:
    """Ask `count` questions again of the shipped engine; store them as `parlay:again`."""
    again = parlay_system(setup, "again", {})
    shipped = key(model, parlay_system(setup), questions[0])[4] if questions else ""
    defaults, store = shipped_outcomes(stores), stores[1]
    done = store.load()
    for question in questions[:count]:
        where = (model, "parlay:again", question.category, question.id, shipped)
        if where in done or (model, "parlay", *where[2:]) not in defaults:
            continue
        reply = await answer(again, question)
        store.append(outcome_of(question, reply, where, commit=head_commit(), tag=setup.tag))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--models", default="qwen", help="comma-separated: smollm2,qwen")
    add("--half", default="validate", help="tune, validate or both")
    add("--categories", default="all")
    add("--rules", default="all", help="comma-separated rule names, or all")
    add("--per-category", type=int, default=40)
    add("--n-ctx", type=int, default=0)
    add("--tag", default="", help="the shipped engine's tag (bench.bfcl.dev)")
    add("--verify", type=int, default=0, help="questions asked again")
    add("--defaults", type=Path, default=STORE, help="the dev store (read)")
    add("--base", default="parlay", help="the dev store's system standing for the shipped engine")
    add("--store", type=Path, default=ABLATION_STORE)
    add("--no-prompt-cache", action="store_true", help=NO_PROMPT_CACHE)
    add("--report", action="store_true", help="rebuild the page, run nothing")
    return parser.parse_args(argv)


def rule_names(spec: str) -> list[str]:
    """`all`: each rule on its own, then every heuristic at once; or named ones, each
    alone or several at once joined by `+`."""
    if spec == "all":
        return [*RULES, HEURISTICS]
    names = [r.strip() for r in spec.split(",") if r.strip()]
    unknown = [m for r in names if r != HEURISTICS for m in r.split("+") if m not in RULES]
    if unknown:
        raise SystemExit(f"unknown rule(s) {', '.join(unknown)}; known: {', '.join(RULES)}")
    return names


async def run_model(args: argparse.Namespace, name: str, stores: Stores) -> None:
    setup = await started(name, args.n_ctx, tag=args.tag, prompt_cache=not args.no_prompt_cache)
    cap = args.per_category or None
    for half in halves(args.half):
        questions = interleave([select(c, half, cap) for c in categories(args.categories)])
        if args.base != "parlay":
            copied = adopt(name, setup, args.base, questions, stores)
            print(f"{name} {half}: {copied} outcomes of {args.base} adopted as parlay's")
        if args.verify:
            await verify(name, setup, questions, stores, args.verify)
        for rule in rule_names(args.rules):
            asked, copied, missing = await ablate_rule(name, setup, rule, questions, stores)
            print(f"{name} {half} no-{rule}: asked {asked}, derived {copied}, no default {missing}")


def write_page(stores: Stores, page: Path, tag: str) -> str:
    defaults = [o for o in stores[0].load().values() if o["system"] == "parlay"]
    text = render_ablation(defaults + list(stores[1].load().values()), tag)
    page.write_text(text)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    categories(args.categories)
    rule_names(args.rules)
    stores = (Store(args.defaults), Store(args.store))
    if not args.report:
        for name in args.models.split(","):
            asyncio.run(run_model(args, name.strip(), stores))
    page = args.store.with_suffix(".md")
    print(write_page(stores, page, args.tag))
    print(f"page: {page}", file=sys.stderr)


if __name__ == "__main__":
    main()
