"""Generation speed of the embedded model by thread count, with the machine idle and busy.

For each machine state (idle; one core kept busy by another process; two such
processes), starts the embedded llama.cpp server with 1 thread, 2 threads, and the count
parlay picks (`parlay.backends.threads`), each in a fresh process, and reads llama.cpp's
own generation speed for a 120-token reply. Writes bench/results/threads.md.

    python bench/threads_bench.py [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "threads.md"
STATES = {"idle": 0, "one core busy": 1, "two busy processes": 2}
SETTINGS = ("1", "2", "rule")
PROMPT = "Write a long story about a lighthouse keeper and a storm, in many paragraphs."


def measure(setting: str) -> dict[str, float]:
    """In this process: start the server with `setting` threads, time one reply."""
    import httpx

    from parlay.backends.catalogue import smollm2_path
    from parlay.backends.local import LlamaServer

    threads = None if setting == "rule" else int(setting)
    server = LlamaServer(smollm2_path(), threads=threads)
    base = server.start()
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 120, "temperature": 0}
    with httpx.Client(base_url=base, timeout=600) as client:
        client.post("/chat/completions", json={**body, "max_tokens": 8})  # warm up
        reply = client.post("/chat/completions", json=body).json()
    timings = reply.get("timings", {})
    return {"threads": float(server.threads or 0), "tok_s": float(timings["predicted_per_second"])}


def run_child(setting: str) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", setting]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def spinners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", choices=SETTINGS)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    from parlay.backends.threads import allowed_cpus, busy_cores

    rows = []
    for state, jobs in STATES.items():
        load = spinners(jobs)
        try:
            time.sleep(1.0)
            background = busy_cores(allowed_cpus(), seconds=1.0)
            cells = {}
            for setting in SETTINGS:
                runs = [run_child(setting) for _ in range(args.runs)]
                cells[setting] = (
                    statistics.median(r["tok_s"] for r in runs),
                    sorted({int(r["threads"]) for r in runs}),
                )
        finally:
            for proc in load:
                proc.kill()
                proc.wait()
        rows.append((state, background, cells))
        print(state, f"{background:.2f}", {k: round(v[0], 1) for k, v in cells.items()})
    write(rows, args.runs)


def write(rows: list[tuple[str, float, dict[str, tuple[float, list[int]]]]], runs: int) -> None:
    lines = [
        "# Embedded model speed by thread count",
        "",
        f"SmolLM2-135M Q4_1, 120 generated tokens, median of {runs} fresh servers per cell,",
        "llama.cpp's own `predicted_per_second`; `bench/threads_bench.py` on "
        f"{len(__import__('os').sched_getaffinity(0))} cores. 'busy before' is what the",
        "machine's other work used, in cores, measured just before the row.",
        "",
        "| machine | busy before | 1 thread | 2 threads | parlay's rule (threads picked) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for state, background, cells in rows:
        rule, picked = cells["rule"]
        lines.append(
            f"| {state} | {background:.2f} | {cells['1'][0]:.1f} tok/s | {cells['2'][0]:.1f} tok/s "
            f"| {rule:.1f} tok/s ({', '.join(map(str, picked))}) |"
        )
    RESULTS.write_text("\n".join(lines) + "\n")
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
