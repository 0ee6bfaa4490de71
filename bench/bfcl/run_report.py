"""The page `bench.bfcl.run` writes beside its results file: figures per (model,
configuration), the issue's targets, and what llama.cpp's native replies left in the text.

(bench/bfcl/report.py is the other page: the one rebuilt from the dev store.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.checker import check
from bench.bfcl.data import ABSTAIN_CATEGORIES, load_category
from bench.bfcl.run_configs import NATIVE_CONFIG
from parlay.engine.contract.parser import parse


def summarize(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures for one (model, config): shares over the call and abstain questions."""
    # Requests that failed (server gone, engine exception) are counted apart, not as
    # wrong answers: a resumed run asks them again.
    errors = sum(o["error_type"] == "request_error" for o in outcomes)
    outcomes = [o for o in outcomes if o["error_type"] != "request_error"]
    by_category: dict[str, list[dict[str, Any]]] = {}
    for outcome in outcomes:
        by_category.setdefault(outcome["category"], []).append(outcome)
    calls = [o for o in outcomes if o["category"] not in ABSTAIN_CATEGORIES]
    abstain = [o for o in outcomes if o["category"] in ABSTAIN_CATEGORIES]

    def share(rows: Sequence[dict[str, Any]], key: str) -> float | None:
        return sum(bool(r[key]) for r in rows) / len(rows) if rows else None

    return {
        "errors": errors,
        "n_call": len(calls),
        "n_abstain": len(abstain),
        "well_formed": share(calls, "well_formed"),
        "right": share(calls, "right"),
        "right_by_category": {
            c: share(rows, "right")
            for c, rows in by_category.items()
            if c not in ABSTAIN_CATEGORIES
        },
        "abstained": share(abstain, "right"),
        "seconds_per_question": (
            sum(o["seconds"] for o in outcomes) / len(outcomes) if outcomes else None
        ),
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


def table(results: dict[str, Any]) -> str:
    header = (
        "| model | configuration | well-formed calls | right calls | simple_python | multiple "
        "| right abstentions (live_irrelevance) | questions (call + abstain) | failed requests "
        "| s / question |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    )
    rows = []
    for model_key, by_config in results["runs"].items():
        for config_key, outcomes in by_config.items():
            s = summarize(list(outcomes.values()))
            by_cat = s["right_by_category"]
            rows.append(
                f"| {model_key} | {config_key} | {_pct(s['well_formed'])} | {_pct(s['right'])} "
                f"| {_pct(by_cat.get('simple_python'))} | {_pct(by_cat.get('multiple'))} "
                f"| {_pct(s['abstained'])} | {s['n_call']} + {s['n_abstain']} | {s['errors']} "
                f"| {s['seconds_per_question'] or 0:.1f} |"
            )
    return header + "\n".join(rows) + "\n"


def _score(summary: dict[str, Any]) -> tuple[float, float]:
    # Right calls and right abstentions weigh the same: calling on everything is no win.
    right, abstained = summary["right"] or 0.0, summary["abstained"] or 0.0
    return ((right + abstained) / 2, summary["well_formed"] or 0.0)


def targets(results: dict[str, Any]) -> str:
    """Per model: the best engine configuration and the issue's targets, met or not."""
    lines = []
    for model_key, by_config in results["runs"].items():
        summaries = {key: summarize(list(o.values())) for key, o in by_config.items() if o}
        native = summaries.get(NATIVE_CONFIG.key)
        # A bracketed configuration ran on an earlier commit, kept for comparison.
        engine = {
            key: s for key, s in summaries.items() if key != NATIVE_CONFIG.key and "[" not in key
        }
        if not engine:
            continue
        best_key = max(engine, key=lambda key: _score(engine[key]))
        best = engine[best_key]
        lines.append(f"- **{model_key}**: best configuration `{best_key}`")
        lines.append(
            f"  - well-formed calls {_pct(best['well_formed'])} (target >= 95 %): "
            f"{'met' if (best['well_formed'] or 0) >= 0.95 else 'not met'}"
        )
        if native is not None:
            gain = 100 * ((best["right"] or 0) - (native["right"] or 0))
            lines.append(
                f"  - right calls {_pct(best['right'])} vs {_pct(native['right'])} with "
                f"llama.cpp's own tools: {gain:+.0f} points (target >= +20): "
                f"{'met' if gain >= 20 else 'not met'}"
            )
        lines.append(
            f"  - right abstentions {_pct(best['abstained'])} (target >= 90 %): "
            f"{'met' if (best['abstained'] or 0) >= 0.90 else 'not met'}"
        )
    return "\n".join(lines) + "\n" if lines else ""


def native_text_calls(results: dict[str, Any]) -> str:
    """What llama.cpp's own tool support left in the text: calls it did not return.

    Each native reply's text is read with parlay's parser; a call naming an offered tool
    counts. This shows how many calls the model wrote that the server did not parse.
    """
    lines = []
    for model_key, by_config in results["runs"].items():
        outcomes = by_config.get(NATIVE_CONFIG.key) or {}
        if not outcomes:
            continue
        questions = {q.id: q for c in results["settings"]["categories"] for q in load_category(c)}
        call_rows = abstain_rows = written = right = called_anyway = 0
        returned = sum(bool(o["calls"]) for o in outcomes.values())
        for outcome in outcomes.values():
            question = questions[outcome["question"]]
            names = [f["name"] for f in question.functions]
            parsed = parse(outcome["text"], names).calls
            calls = [(c.name, dict(c.arguments)) for c in parsed if c.name in names]
            if question.expects_call:
                call_rows += 1
                written += bool(calls)
                right += check(
                    question.category, question.functions, calls, question.ground_truth
                ).valid
            else:
                abstain_rows += 1
                called_anyway += bool(calls)
        lines.append(
            f"- {model_key}: the text of llama.cpp's native replies held a call that parlay's "
            f"parser reads in {written}/{call_rows} call questions ({right} of them right by "
            f"BFCL's rules) and in {called_anyway}/{abstain_rows} live_irrelevance questions; "
            f"the server returned `tool_calls` in {returned}/{len(outcomes)} replies."
        )
    return "\n".join(lines) + "\n" if lines else ""


def write_markdown(path: Path, results: dict[str, Any], notes: str) -> None:
    settings = results["settings"]
    text = (
        "# BFCL accuracy: parlay's prompted engine vs llama.cpp's own tool support\n\n"
        f"Sample: {settings['n']} questions per category ({', '.join(settings['categories'])}),"
        f" seed {settings['seed']}, temperature 0, max_tokens {settings['max_tokens']}, "
        "tool_choice auto everywhere. Generated by `python -m bench.bfcl.run`; per-question "
        f"outcomes in `{path.with_suffix('.json').name}`.\n\n"
        "- well-formed calls: replies to simple_python and multiple questions holding at least "
        "one call, each naming an offered tool with an object of arguments;\n"
        "- right calls: the same questions answered right by BFCL's AST rules "
        "(`bench/bfcl/checker.py`);\n"
        "- right abstentions: live_irrelevance questions (no offered tool fits) answered "
        "without a call.\n\n"
        + table(results)
        + ("\n## Targets (issue 3)\n\n" + targets(results) if targets(results) else "")
        + (
            "\n## What llama.cpp's own tool support left in the text\n\n"
            + native_text_calls(results)
            if native_text_calls(results)
            else ""
        )
        + (f"\n{notes}\n" if notes else "")
    )
    path.write_text(text)
