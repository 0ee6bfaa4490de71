"""An ablated engine becomes the shipped one: its outcomes, copied as the engine's own.

When the engine's default changes to what an ablation ran (some rules switched off), the
ablation's outcomes are the new default's: the questions the rules acted on were asked
again with them off, and the others cannot change (greedy decoding; see
`bench.bfcl.ablation`). This copies them into the dev store as system `parlay` under a new
engine tag, each marked with what it came from, so the dev page can show the engine as
it now ships without asking every question again.

    python -m bench.bfcl.promote --system 'parlay:no-a+b' --from-tag stop14 --tag stop16 \\
        --models qwen
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.bfcl.ablation import ABLATION_STORE
from bench.bfcl.dev import STORE
from bench.bfcl.store import Store, config_key


def promoted(
    outcomes: Iterable[Mapping[str, Any]],
    system: str,
    models: Sequence[str],
    from_tag: str,
    tag: str,
) -> list[dict[str, Any]]:
    """`system`'s outcomes of `from_tag`, as the shipped engine's of `tag`."""
    out: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome["system"] != system or outcome.get("tag") != from_tag:
            continue
        if outcome["model"] not in models:
            continue
        config = {"promoted_from": {"system": system, "tag": from_tag, "config": outcome["config"]}}
        out.append(
            {
                **outcome,
                "system": "parlay",
                "tag": tag,
                "config": config_key(config),
                "promoted": system,
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--system", required=True, help="the ablated system, parlay:no-...")
    parser.add_argument("--from-tag", required=True, help="the engine tag it was run on")
    parser.add_argument("--tag", required=True, help="the new engine tag")
    parser.add_argument("--models", default="qwen,smollm2")
    args = parser.parse_args(argv)
    source = Store(ABLATION_STORE).load().values()
    rows = promoted(source, args.system, args.models.split(","), args.from_tag, args.tag)
    target = Store(STORE)
    done = target.load()
    added = 0
    for row in rows:
        key = (row["model"], "parlay", row["category"], row["question"], row["config"])
        if key not in done:
            target.append(row)
            added += 1
    print(f"{added} outcomes promoted ({len(rows) - added} already there)")


if __name__ == "__main__":
    main()
