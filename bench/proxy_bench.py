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
STUB = ROOT / "tests" / "proxy" / "proxy_stub.py"
RESULTS = ROOT / "bench" / "results"
MODEL = "bench"
KEY = "sk-bench-key"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16}


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


# -- measurements --------------------------------------------------------------------------
# A hand-written HTTP/1.1 keep-alive client on raw asyncio streams: httpx's own overhead
# (and its pool under 64 connections) would otherwise dominate what is measured.


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process and its children (the workers of
    `--workers N`) have used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(child) for child in _children(pid))


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def request_bytes(url: str, stream: bool, api: str = "openai") -> tuple[str, int, bytes]:
    if api == "anthropic":
        parsed = httpx.URL(url + "/messages")
        body = json.dumps({**BODY, "stream": stream}).encode()
    else:
        parsed = httpx.URL(url + "/chat/completions")
        body = json.dumps({**BODY, "stream": stream}).encode()
    head = (
        f"POST {parsed.raw_path.decode()} HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return parsed.host, int(parsed.port or 80), head.encode() + body


async def read_response(reader: asyncio.StreamReader, on_first: Any = None) -> tuple[int, bytes]:
    """Status and body of one response (content-length or chunked)."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed")
    status = int(status_line.split()[1])
    length = None
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        body = await reader.readexactly(length or 0)
        if on_first:
            on_first()
        return status, body
    parts = []
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            await reader.readline()
            return status, b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
        if on_first and len(parts) == 1:
            on_first()


def ok(stream: bool, status: int, body: bytes, api: str = "openai") -> bool:
    if status != 200:
        return False
    if api == "anthropic":
        if stream:
            return body.rstrip().endswith(b'data: {"type":"message_stop"}')
        return b'"content"' in body
    if stream:
        return body.rstrip().endswith(b"data: [DONE]") and b'"error"' not in body
    return b'"choices"' in body


async def latencies(
    url: str, n: int, stream: bool, api: str = "openai"
) -> tuple[list[float], list[float]]:
    """Sequential requests on one keep-alive connection: (total ms, first-body-byte ms)."""
    host, port, raw = request_bytes(url, stream, api)
    reader, writer = await asyncio.open_connection(host, port)
    writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    totals: list[float] = []
    firsts: list[float] = []
    try:
        for i in range(n + n // 10):
            first: list[float] = []
            start = time.perf_counter()
            writer.write(raw)
            status, body = await read_response(
                reader, lambda f=first: f.append(time.perf_counter())
            )
            end = time.perf_counter()
            if not ok(stream, status, body, api):
                raise RuntimeError(f"{url}: bad answer {status} {body[:200]!r}")
            if i >= n // 10:  # the first tenth warms up
                totals.append((end - start) * 1000)
                firsts.append(((first[0] if first else end) - start) * 1000)
    finally:
        writer.close()
    return totals, firsts


async def load(
    url: str, concurrency: int, seconds: float, stream: bool, api: str = "openai"
) -> tuple[float, int, int]:
    """`concurrency` keep-alive clients in a loop for `seconds`: (requests/s, done, errors)."""
    return await load_mixed(url, concurrency, seconds, [(stream, api)])


async def load_mixed(
    url: str, concurrency: int, seconds: float, variants: list[tuple[bool, str]]
) -> tuple[float, int, int]:
    """Client i sends variant i mod len(variants) (streaming or not, which protocol)."""
    done = 0
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker(stream: bool, api: str) -> None:
        nonlocal done, errors
        host, port, raw = request_bytes(url, stream, api)
        writer = None
        while time.perf_counter() < stop:
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, port)
                writer.write(raw)
                status, body = await asyncio.wait_for(read_response(reader), 30)
                if ok(stream, status, body, api):
                    done += 1
                else:
                    errors += 1
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                errors += 1
                if writer is not None:
                    writer.close()
                writer = None
        if writer is not None:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(*variants[i % len(variants)]) for i in range(concurrency)))
    return done / (time.perf_counter() - started), done, errors


# -- the run -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = 300 if args.quick else 2000
    window = 2.0 if args.quick else 5.0
    soak = 10.0 if args.quick else 60.0
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[str, Any] = {"targets": {}, "soak": {}, "notes": []}
    workdir = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    try:
        stub, stub_url = start_stub()
        procs.append(stub)
        parlay_proc, parlay_url = start_parlay(stub_url)
        procs.append(parlay_proc)
        targets = {"direct (stub)": stub_url}
        pids = {"direct (stub)": stub.pid}
        if args.workers_rows:
            targets["parlay serve, 1 worker"] = parlay_url
            pids["parlay serve, 1 worker"] = parlay_proc.pid
            two_proc, two_url = start_parlay(stub_url, workers=2)
            procs.append(two_proc)
            targets["parlay serve, 2 workers"] = two_url
            pids["parlay serve, 2 workers"] = two_proc.pid
        else:
            targets["parlay serve"] = parlay_url
            # Anthropic Messages in front of the OpenAI-speaking stub: the translation cost.
            targets["parlay serve, /v1/messages"] = parlay_url
            pids["parlay serve"] = pids["parlay serve, /v1/messages"] = parlay_proc.pid
        litellm = args.litellm or shutil.which("litellm")
        if args.workers_rows:
            pass
        elif litellm and Path(litellm).exists():
            try:
                proc, url = start_litellm(litellm, stub_url, workdir)
                procs.append(proc)
                targets["LiteLLM proxy"] = url
            except RuntimeError as exc:
                results["notes"].append(f"LiteLLM proxy did not start: {exc}")
        else:
            results["notes"].append("LiteLLM proxy not installed; not measured")
        if "LiteLLM proxy" in targets:
            pids["LiteLLM proxy"] = procs[-1].pid
        # Latency: targets take turns in short rounds, so load from elsewhere on the
        # machine falls on all of them alike; CPU seconds per request of the serving
        # process are recorded too, as they do not depend on that load.
        rounds = 10
        for stream in (False, True):
            key = "stream" if stream else "plain"
            samples: dict[str, tuple[list[float], list[float], float]] = {
                name: ([], [], 0.0) for name in targets
            }
            for _ in range(rounds):
                for name, url in targets.items():
                    api = "anthropic" if "messages" in name else "openai"
                    before = cpu_seconds(pids[name])
                    totals, firsts = asyncio.run(latencies(url, n // rounds, stream, api))
                    used = cpu_seconds(pids[name]) - before
                    t, f, c = samples[name]
                    samples[name] = (t + totals, f + firsts, c + used)
            for name, (totals, firsts, used) in samples.items():
                results["targets"].setdefault(name, {})[key] = {
                    "p50_ms": statistics.median(totals),
                    "p99_ms": pct(totals, 0.99),
                    "ttfb_p50_ms": statistics.median(firsts),
                    "ttfb_p99_ms": pct(firsts, 0.99),
                    # Warm-up requests (a tenth) are included in the CPU count.
                    "cpu_ms_per_request": 1000 * used / (len(totals) * 11 / 10),
                    "rps": {},
                }
            print(f"latency measured ({key})", file=sys.stderr, flush=True)
        for name, url in targets.items():
            api = "anthropic" if "messages" in name else "openai"
            for stream in (False, True):
                key = "stream" if stream else "plain"
                for c in (1, 16, 64):
                    rps, done, errors = asyncio.run(load(url, c, window, stream, api))
                    results["targets"][name][key]["rps"][str(c)] = {
                        "rps": rps,
                        "done": done,
                        "errors": errors,
                    }
            print(f"throughput measured: {name}", file=sys.stderr, flush=True)
        # The soak: 64 clients for the whole window, a quarter each on OpenAI and Anthropic,
        # streaming and not, every answer checked.
        variants = [(False, "openai"), (True, "openai"), (False, "anthropic"), (True, "anthropic")]
        soaked = [n for n in targets if n.startswith("parlay serve") and "/v1/" not in n]
        if args.soak_all and "LiteLLM proxy" in targets:
            soaked.append("LiteLLM proxy")
        for name in soaked:
            mix = variants if name.startswith("parlay serve") else variants[:2]
            rps, done, errors = asyncio.run(load_mixed(targets[name], 64, soak, mix))
            results["soak"][name] = {"seconds": soak, "done": done, "errors": errors, "rps": rps}
            print(f"soaked {name}", file=sys.stderr, flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def table(results: dict[str, Any]) -> str:
    direct = results["targets"]["direct (stub)"]
    lines = [
        "| target | mode | p50 ms | p99 ms | added p50 ms | added p99 ms | TTFB p50 ms "
        "| added TTFB p50 ms | CPU ms/req | req/s @1 | req/s @16 | req/s @64 | errors |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in results["targets"].items():
        for key in ("plain", "stream"):
            m, d = row[key], direct[key]
            errors = sum(v["errors"] for v in m["rps"].values())
            added = "" if name == "direct (stub)" else f"{m['p50_ms'] - d['p50_ms']:.2f}"
            added99 = "" if name == "direct (stub)" else f"{m['p99_ms'] - d['p99_ms']:.2f}"
            added_ttfb = (
                "" if name == "direct (stub)" else f"{m['ttfb_p50_ms'] - d['ttfb_p50_ms']:.2f}"
            )
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
            "| soak: 64 clients (OpenAI and Anthropic, streaming and not) | seconds | requests | errors | req/s |",
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
