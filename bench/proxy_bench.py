"""What the proxy costs: parlay serve (and LiteLLM's proxy, when it installs) in front of a
stub upstream that answers at once, against calling the stub directly.

Three processes on loopback: the stub (tests/proxy/proxy_stub.py), the proxy, and this
script as the client. Measures, streaming and not:
- latency added over the direct call (p50, p99) from sequential requests;
- time to first byte added when streaming;
- requests per second at 1, 16 and 64 concurrent clients;
- a soak: 64 clients for 60 s, counting every error.

    python bench/proxy_bench.py [--quick] [--litellm /path/to/venv/bin/litellm]
    flock /tmp/parlay-model.lock nice python bench/proxy_bench.py --workers-rows

Prints a table and writes bench/results/proxy.md (and proxy.json). `--workers-rows`
measures only `parlay serve` with 1 and 2 worker processes (and the stub directly), and
writes its own section of proxy.md (and proxy-workers.json), leaving the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
# Run as a script (python bench/proxy_bench.py) only bench/ is on the path, not the root.
sys.path.insert(0, str(ROOT))

from bench.proxy_measure import (  # noqa: E402
    BODY,
    KEY,
    MODEL,
    cpu_seconds,
    latencies,
    load,
    load_mixed,
    pct,
)

STUB = ROOT / "tests" / "proxy" / "proxy_stub.py"
RESULTS = ROOT / "bench" / "results"
DIRECT = "direct (stub)"
LATENCY_ROUNDS = 10
CONCURRENCIES = (1, 16, 64)
# The soak's mix: a sixth each on chat completions, Responses and Anthropic Messages,
# streaming and not (LiteLLM's proxy gets the first two, chat completions).
SOAK_VARIANTS = [
    (False, "openai"),
    (True, "openai"),
    (False, "anthropic"),
    (True, "anthropic"),
    (False, "responses"),
    (True, "responses"),
]
SOAK_CLIENTS = 64


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}")
        try:
            r = httpx.post(url, json=BODY, timeout=2, headers={"Authorization": f"Bearer {KEY}"})
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up in {seconds} s")


def start_stub() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(STUB), str(port)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(url + "/chat/completions", proc)
    return proc, url


def start_parlay(upstream: str, workers: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    code = (
        "from parlay.server import ServerConfig, serve;"
        f"serve(ServerConfig({upstream!r}, upstream_model={MODEL!r}, tools='native',"
        f" models=({MODEL!r},), client_keys=({KEY!r},), port={port}, workers={workers}),"
        " log_level='warning')"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(url + "/chat/completions", proc)
    return proc, url


def start_litellm(binary: str, upstream: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = workdir / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-stub\n"
        "litellm_settings:\n"
        "  drop_params: true\n"
        "  telemetry: false\n"
    )
    env = {
        **os.environ,
        "LITELLM_LOG": "ERROR",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DISABLE_SCHEMA_UPDATE": "True",
        "LITELLM_MASTER_KEY": KEY,
    }
    proc = subprocess.Popen(
        [binary, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "litellm.log", "wb"),  # noqa: SIM115
        env=env,
        cwd=workdir,
    )
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(url + "/chat/completions", proc, seconds=180)
    return proc, url


# -- the run -------------------------------------------------------------------------------


def mode(stream: bool) -> str:
    return "stream" if stream else "plain"


def api_of(target: str) -> str:
    # The /v1/messages target speaks Anthropic Messages to parlay, the /v1/responses one
    # OpenAI's Responses API; the others chat completions.
    if "messages" in target:
        return "anthropic"
    return "responses" if "responses" in target else "openai"


def start_targets(
    args: argparse.Namespace, procs: list[subprocess.Popen[bytes]], workdir: Path, notes: list[str]
) -> tuple[dict[str, str], dict[str, int]]:
    """Start the stub and the proxies in front of it: (target -> base URL, target -> the pid
    whose CPU time it costs). Each process joins `procs` as it starts, for the caller to stop."""
    stub, stub_url = start_stub()
    procs.append(stub)
    parlay_proc, parlay_url = start_parlay(stub_url)
    procs.append(parlay_proc)
    targets = {DIRECT: stub_url}
    pids = {DIRECT: stub.pid}
    if args.workers_rows:
        targets["parlay serve, 1 worker"] = parlay_url
        pids["parlay serve, 1 worker"] = parlay_proc.pid
        two_proc, two_url = start_parlay(stub_url, workers=2)
        procs.append(two_proc)
        targets["parlay serve, 2 workers"] = two_url
        pids["parlay serve, 2 workers"] = two_proc.pid
        return targets, pids
    targets["parlay serve"] = parlay_url
    # Anthropic Messages in front of the OpenAI-speaking stub: the translation cost.
    targets["parlay serve, /v1/messages"] = parlay_url
    # The Responses API over the same chat-completions stub: decoding items, the event
    # lifecycle, the echoed request.
    targets["parlay serve, /v1/responses"] = parlay_url
    for name in ("parlay serve", "parlay serve, /v1/messages", "parlay serve, /v1/responses"):
        pids[name] = parlay_proc.pid
    litellm = args.litellm or shutil.which("litellm")
    if litellm and Path(litellm).exists():
        try:
            proc, url = start_litellm(litellm, stub_url, workdir)
            procs.append(proc)
            targets["LiteLLM proxy"] = url
            pids["LiteLLM proxy"] = proc.pid
        except RuntimeError as exc:
            notes.append(f"LiteLLM proxy did not start: {exc}")
    else:
        notes.append("LiteLLM proxy not installed; not measured")
    return targets, pids


def measure_latency(
    targets: dict[str, str], pids: dict[str, int], n: int, stream: bool
) -> dict[str, dict[str, Any]]:
    """Per target: latency and time to first byte over `n` sequential requests, and the CPU
    milliseconds a request costs the serving process."""
    # Targets take turns in short rounds, so load from elsewhere on the machine falls on
    # all of them alike; CPU seconds per request do not depend on that load.
    samples: dict[str, tuple[list[float], list[float], float]] = {
        name: ([], [], 0.0) for name in targets
    }
    for _ in range(LATENCY_ROUNDS):
        for name, url in targets.items():
            before = cpu_seconds(pids[name])
            totals, firsts = asyncio.run(latencies(url, n // LATENCY_ROUNDS, stream, api_of(name)))
            used = cpu_seconds(pids[name]) - before
            t, f, c = samples[name]
            samples[name] = (t + totals, f + firsts, c + used)
    return {
        name: {
            "p50_ms": statistics.median(totals),
            "p99_ms": pct(totals, 0.99),
            "ttfb_p50_ms": statistics.median(firsts),
            "ttfb_p99_ms": pct(firsts, 0.99),
            # Warm-up requests (a tenth) are included in the CPU count.
            "cpu_ms_per_request": 1000 * used / (len(totals) * 11 / 10),
            "rps": {},
        }
        for name, (totals, firsts, used) in samples.items()
    }


def measure_throughput(url: str, api: str, window: float, figures: dict[str, Any]) -> None:
    """Requests per second at each concurrency, plain and streaming, into `figures`."""
    for stream in (False, True):
        by_concurrency = figures[mode(stream)]["rps"]
        for clients in CONCURRENCIES:
            rps, done, errors = asyncio.run(load(url, clients, window, stream, api))
            by_concurrency[str(clients)] = {"rps": rps, "done": done, "errors": errors}


def soak(targets: dict[str, str], seconds: float, soak_all: bool) -> dict[str, dict[str, Any]]:
    """Many clients on a target for the whole window, every answer checked."""
    soaked = [n for n in targets if n.startswith("parlay serve") and "/v1/" not in n]
    if soak_all and "LiteLLM proxy" in targets:
        soaked.append("LiteLLM proxy")
    results: dict[str, dict[str, Any]] = {}
    for name in soaked:
        # LiteLLM's proxy is asked over OpenAI's protocol only.
        mix = SOAK_VARIANTS if name.startswith("parlay serve") else SOAK_VARIANTS[:2]
        rps, done, errors = asyncio.run(load_mixed(targets[name], SOAK_CLIENTS, seconds, mix))
        results[name] = {"seconds": seconds, "done": done, "errors": errors, "rps": rps}
        print(f"soaked {name}", file=sys.stderr, flush=True)
    return results


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = 300 if args.quick else 2000
    window = 2.0 if args.quick else 5.0
    soak_seconds = 10.0 if args.quick else 60.0
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[str, Any] = {"targets": {}, "soak": {}, "notes": []}
    workdir = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    try:
        targets, pids = start_targets(args, procs, workdir, results["notes"])
        for stream in (False, True):
            for name, figures in measure_latency(targets, pids, n, stream).items():
                results["targets"].setdefault(name, {})[mode(stream)] = figures
            print(f"latency measured ({mode(stream)})", file=sys.stderr, flush=True)
        for name, url in targets.items():
            measure_throughput(url, api_of(name), window, results["targets"][name])
            print(f"throughput measured: {name}", file=sys.stderr, flush=True)
        results["soak"] = soak(targets, soak_seconds, args.soak_all)
    finally:
        stop(procs)
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def table(results: dict[str, Any]) -> str:
    direct = results["targets"][DIRECT]
    lines = [
        "| target | mode | p50 ms | p99 ms | added p50 ms | added p99 ms | TTFB p50 ms "
        "| added TTFB p50 ms | CPU ms/req | req/s @1 | req/s @16 | req/s @64 | errors |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in results["targets"].items():
        for key in ("plain", "stream"):
            m, d = row[key], direct[key]
            errors = sum(v["errors"] for v in m["rps"].values())
            added = "" if name == DIRECT else f"{m['p50_ms'] - d['p50_ms']:.2f}"
            added99 = "" if name == DIRECT else f"{m['p99_ms'] - d['p99_ms']:.2f}"
            added_ttfb = "" if name == DIRECT else f"{m['ttfb_p50_ms'] - d['ttfb_p50_ms']:.2f}"
            ttfb = f"{m['ttfb_p50_ms']:.2f}" if key == "stream" else ""
            if key == "plain":
                added_ttfb = ""
            lines.append(
                f"| {name} | {key} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {added} | {added99} "
                f"| {ttfb} | {added_ttfb} | {m['cpu_ms_per_request']:.2f} | {m['rps']['1']['rps']:.0f} | {m['rps']['16']['rps']:.0f} "
                f"| {m['rps']['64']['rps']:.0f} | {errors} |"
            )
    out = "\n".join(lines)
    if results["soak"]:
        soak = [
            "",
            "| soak: 64 clients (chat completions, Responses, Anthropic; streaming and not) "
            "| seconds | requests | errors | req/s |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for name, s in results["soak"].items():
            soak.append(
                f"| {name} | {s['seconds']:.0f} | {s['done']} | {s['errors']} | {s['rps']:.0f} |"
            )
        out += "\n" + "\n".join(soak)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short windows, for a smoke run")
    parser.add_argument("--litellm", help="path to the litellm command (in its own venv)")
    parser.add_argument("--soak-all", action="store_true", help="soak LiteLLM's proxy too")
    parser.add_argument(
        "--workers-rows", action="store_true", help="parlay serve with 1 and 2 workers only"
    )
    parser.add_argument("--out", default=str(RESULTS / "proxy.md"))
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = run(args)
    results["load_average"] = [load_before, os.getloadavg()[0]]
    text = table(results)
    print(text)
    for note in results["notes"]:
        print("note:", note)
    if args.quick:
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    marker = "<!-- workers -->" if args.workers_rows else "<!-- table -->"
    data = (
        out.with_name(out.stem + "-workers.json") if args.workers_rows else out.with_suffix(".json")
    )
    data.write_text(json.dumps(results, indent=2))
    section = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        + f"Python {sys.version.split()[0]}, load average {results['load_average'][0]:.1f} "
        + f"at the start and {results['load_average'][1]:.1f} at the end.\n\n"
        + text
        + "\n"
        + "".join(f"\nNote: {n}\n" for n in results["notes"])
    )
    existing = out.read_text() if out.exists() else "# Proxy overhead\n\n"
    out.write_text(replace_section(existing, marker, section))


def replace_section(text: str, marker: str, section: str) -> str:
    """`text` with what follows `marker` (up to the next `<!-- ` marker line, or the end)
    replaced by `section`; the marker and section appended when absent."""
    if marker not in text:
        return text.rstrip("\n") + f"\n\n{marker}\n{section}"
    head, _, rest = text.partition(marker)
    following = rest.find("\n<!-- ")
    tail = rest[following:] if following >= 0 else ""
    return f"{head}{marker}\n{section}{tail}"


if __name__ == "__main__":
    main()
