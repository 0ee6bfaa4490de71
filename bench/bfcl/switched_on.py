"""An opt-in rule switched on, asked only where it could act: `python -m bench.bfcl.switched_on`.

The ablation's shortcut turned around (`bench.bfcl.ablation`). Decoding is greedy, so
an engine with one more rule on follows the shipped engine's path on every question
where the rule finds nothing to judge. A rule that judges a reply's calls can only act
on a question whose stored outcome was retried (an earlier attempt, not stored, may
have been judged) or whose released calls it judges (`COULD_ACT`); every other
question's outcome is the base engine's, copied with `"derived": true`. The rest are
asked with the rule on. Outcomes go to the dev store as the variant's
(`bench.bfcl.systems.VARIANTS`), so `bench.bfcl.opt_in` pairs them with the engine.

    flock /tmp/parlay-model.lock nice -n 5 python -m bench.bfcl.switched_on \\
        --variants unrelated,typed+unrelated --models qwen --half tune --tag stop16

`--base-tag` takes the base engine's outcomes of an earlier tag, for a rule changed since
they were stored: the variant's outcomes go under `--tag`, the base's are read as stored.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from attrs import evolve

from bench.bfcl.ablation import Outcome, copy_or_ask
from bench.bfcl.data import Question
from bench.bfcl.dev import N_CTX, STORE, categories, halves
from bench.bfcl.models import models
from bench.bfcl.runner import key
from bench.bfcl.split import interleave, select
from bench.bfcl.store import Store
from bench.bfcl.systems import VARIANTS, Setup, parlay_system
from parlay.backends.local import shared_server
from parlay.engine.checks.leaning import leans_to_words
from parlay.engine.checks.relevance import unrelated_tools


def unrelated_judged(question: Question, outcome: Outcome) -> bool:
    """Whether `unrelated_call` judges the released reply: every call goes to a tool
    sharing no word with the request."""
    calls = outcome["calls"]
    unrelated = unrelated_tools(question.messages, question.offered_tools)
    return bool(calls) and all(call["name"] in unrelated for call in calls)


def leaned_judged(_: Question, outcome: Outcome) -> bool:
    """Whether `leaned_to_words` judges the first reply: it leaned to words, and it
    called (the outcome holds calls, or was retried: its first reply may have been one)."""
    leaned = leans_to_words(outcome.get("answer_share"), "typed")
    return leaned and bool(outcome["calls"] or outcome["retries"])


# The rules this can switch on, each with whether it could change a stored outcome.
COULD_ACT: dict[str, Callable[[Question, Outcome], bool]] = {
    "unrelated_call": lambda q, o: bool(o["retries"]) or unrelated_judged(q, o),
    "leaned_to_words": leaned_judged,
}
# Each variant: the engine it adds rules to ("" is the shipped engine) and those rules.
SWITCHED: dict[str, tuple[str, tuple[str, ...]]] = {
    "unrelated": ("", ("unrelated_call",)),
    "typed+unrelated": ("typed", ("unrelated_call",)),
    "typed+leaned": ("typed", ("leaned_to_words",)),
    # Both rules that answer in words where no offered tool may fit (stop 28).
    "typed+leaned+unrelated": ("typed", ("leaned_to_words", "unrelated_call")),
}


def could_act(rules: Sequence[str]) -> Callable[[Question, Outcome], bool]:
    """Whether any of `rules` could change a stored outcome."""
    return lambda q, o: any(COULD_ACT[rule](q, o) for rule in rules)


async def switch_on(
    model: str,
    setups: tuple[Setup, Setup],
    variant: str,
    questions: Sequence[Question],
    store: Store,
) -> tuple[int, int, int]:
    """The variant's outcomes (`setups`: the variant's, the base's): (asked, derived,
    missing a base outcome)."""
    setup, base_setup = setups
    base_variant, rules = SWITCHED[variant]
    base = parlay_system(base_setup, base_variant, VARIANTS.get(base_variant, {}))
    system = parlay_system(setup, variant, VARIANTS[variant])
    done = store.load()

    def stored(question: Question) -> Outcome | None:
        return done.get(key(model, base, question))

    written = (store, done)
    return await copy_or_ask(model, setup, system, questions, written, stored, could_act(rules))


async def run_model(args: argparse.Namespace, name: str, store: Store) -> None:
    [model] = models((name,))
    n_ctx = N_CTX[name]
    server = shared_server(model.path, n_ctx)
    base_url = await asyncio.to_thread(server.start)
    setup = Setup(model, base_url, n_ctx, 512, args.tag)
    setups = (setup, evolve(setup, tag=args.base_tag or args.tag))
    for half in halves(args.half):
        groups = [select(c, half, args.per_category or None) for c in categories("all")]
        questions = interleave(groups)
        for variant in args.variants.split(","):
            asked, copied, missing = await switch_on(name, setups, variant, questions, store)
            print(f"{name} {half} {variant}: asked {asked}, derived {copied}, no base {missing}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="unrelated", help=", ".join(SWITCHED))
    parser.add_argument("--models", default="qwen", help="comma-separated: smollm2,qwen")
    parser.add_argument("--half", default="tune", help="tune, validate or both")
    parser.add_argument("--per-category", type=int, default=40)
    parser.add_argument("--tag", required=True, help="the engine's tag (bench.bfcl.dev)")
    parser.add_argument("--base-tag", default="", help="the base's, when older (default: --tag)")
    parser.add_argument("--store", default=str(STORE))
    args = parser.parse_args(argv)
    unknown = [v for v in args.variants.split(",") if v not in SWITCHED]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(SWITCHED)}")
    store = Store(Path(args.store))
    for name in args.models.split(","):
        asyncio.run(run_model(args, name.strip(), store))


if __name__ == "__main__":
    main()
