"""The gains the engine's rules state (`parlay.engine.checks.measured`) are the ones the
ablation table in bench/results/bfcl-ablation.md shows (or, for an opt-in rule measured
by asking every question with it on, bench/results/bfcl-opt-in.md), and every heuristic
states one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parlay.engine.checks.measured import MEASURED, Gain, describe
from parlay.engine.checks.rules import GUARDS, RULES

RESULTS = Path(__file__).parents[2] / "bench" / "results"
TABLES = (RESULTS / "bfcl-ablation.md", RESULTS / "bfcl-opt-in.md")
ROW = re.compile(
    r"^\| (?P<rule>\w+) \| (?P<questions>\d+) \| (?P<acted>\d+) \| (?:[^|]+ \| )+"
    r"(?P<points>[+-][\d.]+) \((?P<low>[+-][\d.]+) to (?P<high>[+-][\d.]+)\) \|"
)

POOLED_ROW = re.compile(
    r"^\| (?P<rule>\w+) \| (?P<questions>\d+(?: \+ \d+)+) \| (?P<acted>\d+) \| "
    r"(?P<points>[+-][\d.]+) \((?P<low>[+-][\d.]+) to (?P<high>[+-][\d.]+)\) \|"
)


def table_rows() -> dict[tuple[str, str, str], Gain]:
    rows: dict[tuple[str, str, str], Gain] = {}
    model = half = ""
    lines = [line for table in TABLES for line in table.read_text().splitlines()]
    for line in lines:
        if line.startswith("## "):
            heading = re.match(r"^## (\w+), (\w+) half", line)
            pooled = re.match(r"^## Pooled over the models, (\w+) half", line)
            model, half = heading.groups() if heading else ("", "")
            if pooled:
                model, half = "pooled", pooled.group(1)
        elif (row := POOLED_ROW.match(line)) and model == "pooled":
            rows[model, half, row["rule"]] = Gain(
                model,
                half,
                sum(int(n) for n in row["questions"].split(" + ")),
                int(row["acted"]),
                float(row["points"]),
                float(row["low"]),
                float(row["high"]),
            )
        elif (row := ROW.match(line)) and model:
            rows[model, half, row["rule"]] = Gain(
                model,
                half,
                int(row["questions"]),
                int(row["acted"]),
                float(row["points"]),
                float(row["low"]),
                float(row["high"]),
            )
    return rows


@pytest.mark.parametrize("rule", sorted(MEASURED))
def test_a_rules_stated_gain_is_the_tables(rule: str) -> None:
    rows = table_rows()
    for gain in MEASURED[rule]:
        assert rows[gain.model, gain.half, rule] == gain


def test_every_heuristic_states_what_it_measured() -> None:
    # duplicate_calls acts only in the typed format, which the default engine does not use.
    heuristics = set(RULES) - GUARDS - {"duplicate_calls"}
    assert heuristics <= set(MEASURED)


def test_a_rule_describes_what_it_catches_and_what_it_measured() -> None:
    text = describe("forced_call")
    assert RULES["forced_call"] in text and "qwen, validate half: +2.8 points" in text
    assert "pooled, validate half: +2.7 points (-0.3 to +6.5)" in text
    assert describe("unknown_tool").endswith("Measured: not measured.")
