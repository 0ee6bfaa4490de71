"""Fuzz the action parser: random and adversarial replies, whole and streamed.

    nice -n 10 python bench/fuzz_parser.py [--inputs 100000] [--seed 0] [--workers 2]

Every input is parsed whole and fed in chunks (random sizes of 1-8 characters, or one
character at a time for a quarter of the inputs), under a per-input watchdog (SIGALRM in
the worker: the parser's loops are Python, so a hang is interrupted; a batch that does not
come back at all is counted as hung too). Counted per generator: exceptions, hangs,
broken invariants (a chunking that gives other calls, text or argument deltas than the
whole parse; deltas that do not load to the call's arguments) and the time per 10 KB.

Time per 10 KB is `ms * 10 KB / max(size, 1 KB)`: an input under 1 KB counts as 1 KB, so
a tiny input's fixed cost does not read as a rate. The first measurements run two
workers on a shared 2-core machine and are noisy, so the slowest 30 parses and a uniform
sample of 3,000 are timed again (best of 3, in this process): the slowest and the p50/p99
reported come from those, and the raw figures are kept beside them. Inputs are a function of (seed, index): a failure is
reproduced with `--seed S --start INDEX --inputs 1 --show`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _table import RESULTS, markdown_table, write_result
from fuzz_inputs import GENERATORS, make_input

from parlay.engine.contract.parser import ActionStreamParser
from parlay.events import Event, TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart

TOOLS = ("get_weather", "add", "search", "write_file")
TIMEOUT_S = 5.0
TARGET_MS_PER_10KB = 50.0
FLOOR = 1024


class Hang(Exception):
    """Raised by the watchdog in a worker."""


def _alarm(_signum: int, _frame: object) -> None:
    raise Hang


def feed_all(text: str, sizes: list[int]) -> tuple[float, list[Event], Any]:
    ids = iter(range(1_000_000))
    parser = ActionStreamParser(TOOLS, id_factory=lambda: f"id{next(ids)}")
    events: list[Event] = []
    started = time.perf_counter()
    if not sizes:
        events += parser.feed(text)
    else:
        at, k = 0, 0
        while at < len(text):
            size = sizes[k % len(sizes)]
            events += parser.feed(text[at : at + size])
            at += size
            k += 1
    events += parser.finish()
    return time.perf_counter() - started, events, parser.result()


def summary(events: list[Event]) -> tuple[Any, ...]:
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    starts = [(e.id, e.name) for e in events if isinstance(e, ToolCallStart)]
    deltas: dict[str, str] = defaultdict(str)
    for e in events:
        if isinstance(e, ToolCallArgsDelta):
            deltas[e.id] += e.delta
    ends = [
        (e.call.id, e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallEnd)
    ]
    return text, starts, dict(deltas), ends


def violation(whole: tuple[Any, ...], chunked: tuple[Any, ...], result: Any) -> str:
    if chunked != whole:
        return "a chunking differs from the whole parse"
    text, starts, deltas, ends = whole
    if text != result.text or [s[0] for s in starts] != [e[0] for e in ends]:
        return "events and result disagree (text, or a call that started and never ended)"
    for call_id, _name, arguments in ends:
        if call_id not in deltas:
            if arguments != {}:
                return "a call with arguments but no deltas"
            continue
        try:
            loaded = json.loads(deltas[call_id])
        except ValueError:
            return "argument deltas are not JSON"
        if loaded != arguments:
            return "argument deltas do not load to the call's arguments"
    return ""


def chunk_sizes(index: int, size: int) -> tuple[str, list[int]]:
    if index % 4 == 0 and size <= 60_000:
        return "1-char", [1]
    rng = random.Random(index)
    return "chunks 1-8", [rng.randint(1, 8) for _ in range(64)]


def run_one(seed: int, index: int, timeout: float) -> dict[str, Any]:
    generator, text = make_input(seed, index)
    record: dict[str, Any] = {"index": index, "generator": generator, "size": len(text)}
    mode, sizes = chunk_sizes(index, len(text))
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        whole_s, whole_events, result = feed_all(text, [])
        chunked_s, chunked_events, _ = feed_all(text, sizes)
        record["violation"] = violation(summary(whole_events), summary(chunked_events), result)
    except Hang:
        record["hang"] = True
        return record
    except Exception as exc:  # the point of the fuzz: any escape is counted
        record["exception"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return record
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    record["times"] = {"whole": whole_s, mode: chunked_s}
    return record


def run_batch(job: tuple[int, int, int, float]) -> list[dict[str, Any]]:
    seed, start, count, timeout = job
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(1000)
    return [run_one(seed, index, timeout) for index in range(start, start + count)]


def per_10kb(seconds: float, size: int) -> float:
    return seconds * 1000 * 10240 / max(size, FLOOR)


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    jobs = [
        (args.seed, start, min(args.batch, args.start + args.inputs - start), args.timeout)
        for start in range(args.start, args.start + args.inputs, args.batch)
    ]
    records: list[dict[str, Any]] = []
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        pending = [(job, pool.apply_async(run_batch, (job,))) for job in jobs]
        for n, (job, result) in enumerate(pending, 1):
            try:
                records += result.get(timeout=job[2] * job[3] * 2 + 60)
            except multiprocessing.TimeoutError:
                records += [
                    {"index": i, "generator": "?", "size": 0, "hang": True, "batch": True}
                    for i in range(job[1], job[1] + job[2])
                ]
            if n % 20 == 0 or n == len(pending):
                done = sum(j[2] for j, _ in pending[:n])
                print(f"  {done:,} inputs, {time.monotonic() - started:.0f} s", flush=True)
        pool.terminate()
    return records


def retime(seed: int, records: list[dict[str, Any]], top: int) -> dict[tuple[int, str], float]:
    """Time the slowest (input, mode) pairs again, best of 3, in this process."""
    timed = [
        (per_10kb(s, r["size"]), r["index"], mode)
        for r in records
        for mode, s in r.get("times", {}).items()
    ]
    timed.sort(reverse=True)
    return {(index, mode): best_rate(seed, index, mode) for _rate, index, mode in timed[:top]}


def best_rate(seed: int, index: int, mode: str) -> float:
    """ms per 10 KB of one (input, mode), best of 3."""
    _generator, text = make_input(seed, index)
    sizes = [] if mode == "whole" else chunk_sizes(index, len(text))[1]
    return per_10kb(min(feed_all(text, sizes)[0] for _ in range(3)), len(text))


def sample_rates(seed: int, records: list[dict[str, Any]], count: int) -> list[float]:
    """A uniform sample of (input, mode) pairs timed again, best of 3: the distribution
    without the shared machine's pauses (the first measurements run two to a core)."""
    pairs = [(r["index"], mode) for r in records for mode in r.get("times", {})]
    rng = random.Random(seed)
    return [best_rate(seed, i, m) for i, m in rng.sample(pairs, min(count, len(pairs)))]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def commit() -> str:
    root = Path(__file__).resolve().parents[1]
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "src/parlay/contract/parser"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("-dirty" if dirty else "")


def generator_rows(records: list[dict[str, Any]]) -> list[list[object]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[r["generator"]].append(r)
    rows: list[list[object]] = []
    for name in [*GENERATORS, "?"]:
        group = groups.get(name)
        if not group:
            continue
        rates = [per_10kb(s, r["size"]) for r in group for s in r.get("times", {}).values()]
        rows.append(
            [
                name,
                f"{len(group):,}",
                f"{sum(r['size'] for r in group) / len(group):,.0f}",
                sum(1 for r in group if "exception" in r),
                sum(1 for r in group if r.get("hang")),
                sum(1 for r in group if r.get("violation")),
                f"{percentile(rates, 0.5):.2f}",
                f"{percentile(rates, 0.99):.2f}",
                f"{max(rates, default=0):.1f}",
            ]
        )
    return rows


def report(args: argparse.Namespace, records: list[dict[str, Any]], wall: float) -> dict:
    rates = [per_10kb(s, r["size"]) for r in records for s in r.get("times", {}).values()]
    again = retime(args.seed, records, args.retime)
    sample = sample_rates(args.seed, records, args.sample)
    sizes = {r["index"]: (r["generator"], r["size"]) for r in records}
    slow = sorted(again.items(), key=lambda kv: -kv[1])
    failures = [
        {
            k: r[k]
            for k in ("index", "generator", "size", "exception", "hang", "violation")
            if r.get(k)
        }
        for r in records
        if "exception" in r or r.get("hang") or r.get("violation")
    ]
    data = {
        "inputs": len(records),
        "parses": len(rates),
        "exceptions": sum(1 for r in records if "exception" in r),
        "hangs": sum(1 for r in records if r.get("hang")),
        "invariant_violations": sum(1 for r in records if r.get("violation")),
        "slowest_ms_per_10kb": round(slow[0][1], 2) if slow else 0.0,
        "slowest_raw_ms_per_10kb": round(max(rates, default=0.0), 2),
        "p99_ms_per_10kb": round(percentile(sample, 0.99), 3),
        "median_ms_per_10kb": round(percentile(sample, 0.5), 3),
        "p99_raw_ms_per_10kb": round(percentile(rates, 0.99), 3),
        "median_raw_ms_per_10kb": round(percentile(rates, 0.5), 3),
        "retimed_sample": len(sample),
        "target_ms_per_10kb": TARGET_MS_PER_10KB,
        "timeout_s": args.timeout,
        "seed": args.seed,
        "start": args.start,
        "wall_s": round(wall, 1),
        "commit": commit(),
        "slowest": [
            {
                "index": i,
                "mode": m,
                "generator": sizes[i][0],
                "size": sizes[i][1],
                "ms_per_10kb": round(v, 2),
            }
            for (i, m), v in slow[:10]
        ],
        "failures": failures[:200],
    }
    return data


def render(args: argparse.Namespace, records: list[dict[str, Any]], data: dict) -> None:
    headers = ["generator", "inputs", "mean chars", "exceptions", "hangs", "invariant breaks"]
    headers += ["p50 ms/10KB (raw)", "p99 (raw)", "slowest (raw)"]
    rows = generator_rows(records)
    rows.append(
        [
            "**all**",
            f"{data['inputs']:,}",
            "",
            data["exceptions"],
            data["hangs"],
            data["invariant_violations"],
            f"{data['median_raw_ms_per_10kb']:.2f}",
            f"{data['p99_raw_ms_per_10kb']:.2f}",
            f"{data['slowest_raw_ms_per_10kb']:.1f}",
        ]
    )
    table = markdown_table(headers, rows)
    slow = markdown_table(
        ["input", "generator", "chars", "mode", "ms/10KB (best of 3)"],
        [
            [s["index"], s["generator"], f"{s['size']:,}", s["mode"], f"{s['ms_per_10kb']:.1f}"]
            for s in data["slowest"]
        ],
    )
    met = data["exceptions"] == 0 and data["hangs"] == 0 and data["invariant_violations"] == 0
    met = met and data["slowest_ms_per_10kb"] < TARGET_MS_PER_10KB
    verdict = (
        f"{data['inputs']:,} inputs ({data['parses']:,} parses: whole and chunked) in "
        f"{data['wall_s']:.0f} s, seed {data['seed']}, commit {data['commit']}: "
        f"{data['exceptions']} exceptions, {data['hangs']} hangs (watchdog {args.timeout:g} s), "
        f"{data['invariant_violations']} broken invariants; slowest "
        f"{data['slowest_ms_per_10kb']:.1f} ms per 10 KB re-timed "
        f"({data['slowest_raw_ms_per_10kb']:.1f} ms as first measured on the shared machine), "
        f"p99 {data['p99_ms_per_10kb']:.2f} ms over {data['retimed_sample']:,} parses re-timed "
        f"({data['p99_raw_ms_per_10kb']:.2f} ms as first measured). Target (0, 0, under {TARGET_MS_PER_10KB:g} ms): "
        + ("met." if met else "NOT met.")
    )
    failures = "\n".join(f"- {f}" for f in data["failures"][:20]) or "None."
    print(table, slow, verdict, failures, sep="\n\n")
    if args.write:
        write_result(
            "fuzz_parser",
            "Action parser fuzz",
            [
                ("By generator", table + "\n\n" + verdict),
                ("Slowest inputs, timed again", slow),
                ("Failures", failures),
            ],
        )
        (RESULTS / "fuzz_parser.json").write_text(json.dumps(data, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    parser.add_argument("--retime", type=int, default=30, help="slowest parses timed again")
    parser.add_argument("--sample", type=int, default=3000, help="parses re-timed for p50/p99")
    parser.add_argument("--show", action="store_true", help="print the inputs, do not run")
    parser.add_argument("--no-write", dest="write", action="store_false")
    args = parser.parse_args()
    if args.show:
        for index in range(args.start, args.start + args.inputs):
            generator, text = make_input(args.seed, index)
            print(index, generator, repr(text), sep="\t")
        return
    started = time.monotonic()
    records = collect(args)
    render(args, records, report(args, records, time.monotonic() - started))


if __name__ == "__main__":
    main()
