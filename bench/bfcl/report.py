"""The results page, rebuilt from the store alone: systems side by side, per half.

Within one model, half and category, every system is scored on the questions all of
them answered there (a run cut short leaves one system a question ahead; a system never
run on a category, or run on only part of the shipped engine's questions, does not
shrink the others: it shows nothing there). Pooled rows pool questions, not
categories: "single-call" is simple_python, simple_java, simple_javascript and multiple;
"parallel" is parallel_multiple, live_parallel and live_parallel_multiple; "calls" is
both; "balanced" is the mean of "calls" and the abstentions on live_irrelevance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench._table import markdown_table
from bench.bfcl.data import (
    ABSTAIN_CATEGORIES,
    CALL_CATEGORIES,
    DEV_CATEGORIES,
    PARALLEL_CATEGORIES,
    SINGLE_CALL_CATEGORIES,
)
from bench.bfcl.outcome import REQUEST_ERROR
from bench.bfcl.split import HALVES, Half
from bench.bfcl.stats import NOTHING, Share, mean, wilson

Outcome = Mapping[str, Any]
POOLS = {
    "single-call pooled": SINGLE_CALL_CATEGORIES,
    "parallel pooled": PARALLEL_CATEGORIES,
    "calls pooled": CALL_CATEGORIES,
}
BALANCED = "balanced"
METRICS = ("right", "well_formed", "abstained")


def labels(outcomes: Iterable[Outcome]) -> dict[tuple[str, str], str]:
    """(system, config) -> the column's name: the system, and its config when it has two
    (give it the outcomes of one model)."""
    configs: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        if o["config"] not in configs[o["system"]]:
            configs[o["system"]].append(o["config"])
    return {
        (system, config): system if len(found) == 1 else f"{system} [{config}]"
        for system, found in configs.items()
        for config in found
    }


class Cell:
    """The outcomes of one (model, half) grouped by column and category."""

    def __init__(self, outcomes: Sequence[Outcome], named: Mapping[tuple[str, str], str]) -> None:
        self.by: dict[str, dict[str, dict[str, Outcome]]] = defaultdict(lambda: defaultdict(dict))
        for o in outcomes:
            self.by[named[o["system"], o["config"]]][o["category"]][o["question"]] = o
        self.columns = sorted(self.by, key=_column_order)
        self._common: dict[str, set[str]] = {}

    def common(self, category: str) -> set[str]:
        """The questions of a category every column that covers it has answered. The
        shipped engine's questions (else the most any column answered) set the ground: a
        column answering only part of them (a variant asked on a few) is left out rather
        than shrinking every other column."""
        if category not in self._common:
            self._common[category] = self._covered(category)
        return self._common[category]

    def _covered(self, category: str) -> set[str]:
        answered = {
            c: set(by_cat[category]) for c, by_cat in self.by.items() if by_cat.get(category)
        }
        if not answered:
            return set()
        ground = answered.get("parlay") or max(answered.values(), key=len)
        covering = [qs for qs in answered.values() if qs >= ground]
        return set.intersection(*covering)

    def share(self, column: str, categories: Sequence[str], metric: str) -> Share:
        """The column's share over the common questions of these categories; nothing when
        it did not answer all of one of them (a pool it only partly covers is no pool)."""
        hits = n = 0
        for category in categories:
            rows = self.by[column].get(category, {})
            if not self.common(category) <= rows.keys():
                return NOTHING
            for qid in self.common(category):
                if qid in rows:
                    n += 1
                    hits += bool(rows[qid][metric])
        return wilson(hits, n)

    def balanced(self, column: str) -> Share:
        return mean(
            self.share(column, CALL_CATEGORIES, "right"),
            self.share(column, ABSTAIN_CATEGORIES, "right"),
        )

    def row(self, name: str, metric: str) -> dict[str, Share]:
        if name == BALANCED:
            return {c: self.balanced(c) if metric == "right" else NOTHING for c in self.columns}
        categories = POOLS.get(name, (name,))
        return {c: self.share(c, categories, metric) for c in self.columns}

    def n(self, name: str) -> int:
        categories = POOLS.get(name, (name,))
        if name == BALANCED:
            categories = CALL_CATEGORIES + ABSTAIN_CATEGORIES
        return sum(len(self.common(c)) for c in categories)


def _column_order(column: str) -> tuple[int, str]:
    order = ("parlay", "naive", "toolproxy", "llama.cpp")
    base = column.split(" [")[0]
    if base in order:
        return order.index(base), column
    return (1 if base.startswith("parlay:") else len(order)), column


def row_names(cell: Cell, metric: str) -> list[str]:
    present = [c for c in DEV_CATEGORIES if cell.common(c)]
    if metric == "well_formed":
        present = [c for c in present if c not in ABSTAIN_CATEGORIES]
    pooled = [name for name in POOLS if cell.n(name)]
    if metric == "right" and cell.n(BALANCED) and cell.common(ABSTAIN_CATEGORIES[0]):
        pooled.append(BALANCED)
    return present + pooled


def metric_table(cell: Cell, metric: str) -> str:
    rows = []
    for name in row_names(cell, metric):
        shares = cell.row(name, metric)
        label = f"**{name}**" if name in POOLS or name == BALANCED else name
        rows.append([label, cell.n(name), *(shares[c].render() for c in cell.columns)])
    return markdown_table(["category", "n", *cell.columns], rows)


def split(outcomes: Iterable[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
    """model -> half -> outcomes."""
    out: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        out[o["model"]][o["half"]].append(o)
    return out


def agreement(cells: Mapping[Half, Cell]) -> tuple[str, list[str]]:
    """The right-share rows measured on both halves, and the ones whose intervals part."""
    tune, validate = cells.get("tune"), cells.get("validate")
    if tune is None or validate is None:
        return "", []
    rows: list[list[object]] = []
    parted: list[str] = []
    for column in [c for c in tune.columns if c in validate.columns]:
        for name in [n for n in row_names(tune, "right") if n in row_names(validate, "right")]:
            first, second = tune.row(name, "right")[column], validate.row(name, "right")[column]
            if not (first.measured and second.measured):
                continue
            agree = first.agrees_with(second)
            rows.append(
                [column, name, first.render(), second.render(), "yes" if agree else "**no**"]
            )
            if not agree:
                parted.append(f"{column} / {name}")
    header = ["system", "row", "tune", "validate", "agree"]
    return markdown_table(header, rows), parted


def timing(outcomes: Sequence[Outcome]) -> str:
    by: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by[o["model"], o["system"]].append(o)
    rows = []
    for (model, system), found in sorted(
        by.items(), key=lambda kv: (kv[0][0], _column_order(kv[0][1]))
    ):
        seconds = sorted(o["seconds"] for o in found)
        failed = sum(o["error_type"] == REQUEST_ERROR for o in found)
        median = seconds[len(seconds) // 2]
        counted = [o["requests"] for o in found if o.get("requests") is not None]
        requests = f"{sum(counted) / len(counted):.2f}" if counted else "not counted"
        mean = f"{sum(seconds) / len(found):.1f}"
        rows.append([model, system, len(found), mean, f"{median:.1f}", requests, failed])
    header = [
        "model", "system", "outcomes", "s / question (mean)", "median",
        "requests / question", "failed requests",
    ]  # fmt: skip
    return markdown_table(header, rows)


def configs(outcomes: Sequence[Outcome]) -> str:
    """Per model, each column's config hash and the commits its outcomes came from."""
    rows: list[list[object]] = []
    for model, halves in sorted(split(outcomes).items()):
        found = [o for rows in halves.values() for o in rows]
        named = labels(found)
        commits: dict[tuple[str, str], set[str]] = defaultdict(set)
        for o in found:
            commits[o["system"], o["config"]].add(o.get("commit") or "?")
        for key in sorted(commits, key=lambda k: _column_order(named[k])):
            made = ", ".join(f"`{c}`" for c in sorted(commits[key]))
            rows.append([model, named[key], f"`{key[1]}`", made])
    return markdown_table(["model", "system", "config", "commits"], rows)


INTRO = """\
Made by `python -m bench.bfcl.dev` (bench/bfcl/dev.py), rebuilt from the outcomes in
`{store}` with `--report`. BFCL v4 (`bfcl-eval` 2026.3.23), every category with ground
truth or a clear rule except the four kept aside for an independent check (live_simple,
parallel, irrelevance, live_multiple: never run, never read). Each category is split in
two halves by the sha256 of the question id (even: tune, odd: validate). Temperature 0,
one llama.cpp server per model shared by every system, `tool_choice` auto, parallel
calls allowed. Cells: share (95 % Wilson interval); n is the questions every system was
scored on. right follows BFCL's rules (live_irrelevance: no call; live_relevance: at
least one call); well-formed: at least one call, every one naming an offered function
with an object of arguments; abstained: no call. Pooled rows pool questions;
balanced is the mean of "calls pooled" and live_irrelevance (its interval the mean of
the two intervals' ends). `parlay` is the engine as it shipped at the run's tag: up to
stop23 that is the json format under a grammar; since stop 26 the typed format is the
default under a grammar, and the runs that measured it are the `parlay:typed` column.
"""


def render(outcomes: Sequence[Outcome], store: str = "bench/results/bfcl-dev.jsonl") -> str:
    parts = [
        "# BFCL development benchmark: parlay and three baselines, tune and validate halves",
        "",
    ]
    parts += [INTRO.format(store=store)]
    parted_all: list[str] = []
    agreements = []
    for model, halves in sorted(split(outcomes).items()):
        # A config holds the model file, so columns are named within one model.
        named = labels(o for found in halves.values() for o in found)
        cells = {half: Cell(halves[half], named) for half in HALVES if halves.get(half)}
        for half, cell in cells.items():
            parts += [f"## {model}, {half} half", ""]
            for metric, title in zip(METRICS, ("Right", "Well-formed", "Abstained"), strict=True):
                parts += [f"{title}:", "", metric_table(cell, metric), ""]
        table, parted = agreement(cells)
        if table:
            agreements += [f"### {model}", "", table, ""]
            parted_all += [f"{model}: {p}" for p in parted]
    if agreements:
        parts += ["## Do the tune and validate halves agree?", ""]
        verdict = (
            "They agree within their intervals on every row."
            if not parted_all
            else "Their intervals do not overlap on: " + "; ".join(parted_all) + "."
        )
        parts += [verdict, "", *agreements]
    parts += ["## Time per question", "", timing(outcomes), ""]
    parts += ["## Configurations", "", configs(outcomes), ""]
    return "\n".join(parts)
