"""What nothing a client or an upstream sends can do to `parlay serve`: crash it (5xx),
hang it, or get an answer outside the client's protocol.

- fuzz: the parser fuzz's figures, read from bench/results/fuzz_parser.json when there
  (bench/fuzz_parser.py makes them; this script only shows them);
- malformed requests: every kind in tests/proxy/malformed.py x both endpoints x both
  modes (prompted engine, native passthrough), in process: statuses, 5xx count, whether
  every body is in the protocol's error shape, upstream calls made (must be 0);
- upstream faults: each fault of the stub upstream (tests/proxy/proxy_stub.py) x both
  modes, through uvicorn on loopback: what the client gets whole and streamed in each
  protocol, upstream calls per request (1), hangs (0);
- soak: `parlay serve` in both modes as subprocesses, clients on both protocols,
  streaming and not, for a bounded time: errors (0).

    flock /tmp/parlay-model.lock nice python bench/reliability.py [--quick]

Prints the tables and writes bench/results/reliability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "proxy"))
sys.path.insert(0, str(ROOT))

from malformed import KINDS, shaped  # noqa: E402
from proxy_harness import running  # noqa: E402
from proxy_stub import StubUpstream, free_port  # noqa: E402

from bench._table import markdown_table, write_result  # noqa: E402
from bench.reliability_soak import soak  # noqa: E402
from parlay import Capabilities, OpenAIBackend, PromptedBackend  # noqa: E402
from parlay.server import create_app  # noqa: E402

FUZZ = ROOT / "bench" / "results" / "fuzz_parser.json"
MODES = ("native", "prompted")
APIS = ("openai", "anthropic")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
HANG = 15.0  # seconds after which a request counts as hung


def backend(base_url: str, model: str, mode: str, timeout: float = 5.0) -> Any:
    inner = OpenAIBackend(
        model,
        base_url=base_url,
        api_key="sk-reliability-0123456789",
        timeout=timeout,
        capabilities=Capabilities(native_tools=mode == "native", json_schema=True),
    )
    return inner if mode == "native" else PromptedBackend(inner)


# -- fuzz ----------------------------------------------------------------------------------


def fuzz_section() -> str:
    if not FUZZ.exists():
        return "No `bench/results/fuzz_parser.json` yet: run `bench/fuzz_parser.py` first."
    data = json.loads(FUZZ.read_text())
    keys = ("inputs", "exceptions", "hangs", "slowest_ms_per_10kb")
    rows = [[k, f"{data[k]:,}" if isinstance(data.get(k), int) else data.get(k, "—")] for k in keys]
    return "From `bench/results/fuzz_parser.json`:\n\n" + markdown_table(["", "value"], rows)


# -- malformed requests --------------------------------------------------------------------


async def malformed(stub: StubUpstream) -> tuple[str, dict[str, int]]:
    apps = {mode: create_app(backend(stub.base_url, f"count-{mode}", mode)) for mode in MODES}
    before = {mode: stub.calls(f"count-{mode}") for mode in MODES}
    rows = []
    totals = {"requests": 0, "5xx": 0, "unshaped": 0, "unexpected": 0}
    for kind in KINDS:
        cells = []
        for api in APIS:
            for mode in MODES:
                transport = httpx.ASGITransport(apps[mode])
                async with httpx.AsyncClient(transport=transport, base_url="http://p") as c:
                    method, path, raw = kind.build(api)
                    r = await c.request(method, path, content=raw)
                ok_shape = _json_shaped(api, r)
                totals["requests"] += 1
                totals["5xx"] += r.status_code >= 500
                totals["unshaped"] += not ok_shape
                totals["unexpected"] += r.status_code != kind.status
                cells.append(f"{r.status_code}" + ("" if ok_shape else " (not shaped)"))
        rows.append([kind.name, *cells])
    totals["upstream calls"] = sum(stub.calls(f"count-{m}") - before[m] for m in MODES)
    head = ["kind", "OpenAI native", "OpenAI prompted", "Anthropic native", "Anthropic prompted"]
    summary = (
        f"{len(KINDS)} kinds x 2 endpoints x 2 modes = {totals['requests']} requests: "
        f"**{totals['5xx']} answered 5xx**, {totals['unshaped']} outside the protocol's "
        f"error shape, {totals['unexpected']} with another status than expected, "
        f"**{totals['upstream calls']} upstream calls**."
    )
    return summary + "\n\n" + markdown_table(head, rows), totals


def _json_shaped(api: str, r: httpx.Response) -> bool:
    try:
        return shaped(api, r.json())
    except ValueError:
        return False


# -- upstream faults -----------------------------------------------------------------------

# (label, stub mode, proxy's upstream timeout): "refused" has no stub behind it.
FAULTS = (
    ("HTTP 500", "fail-500", 5.0),
    ("HTTP 429 with Retry-After: 7", "fail-429", 5.0),
    ("HTTP 401 (echoing the key)", "fail-401", 5.0),
    ("body not JSON (HTML)", "not-json", 5.0),
    ("stream cut mid-reply", "cut", 5.0),
    ("garbage SSE line", "garbage-sse", 5.0),
    ("stall mid-stream past the timeout (1 s)", "stall", 1.0),
    ("no answer within the timeout (1 s)", "slow", 1.0),
    ("connection refused", "refused", 5.0),
)


def _outcome(api: str, stream: bool, r: httpx.Response) -> str:
    """What the client got, in a few words."""
    if r.status_code == 200 and stream:
        frames = r.text.strip().split("\n\n")
        last = frames[-1]
        data = json.loads(last.split("data: ", 1)[1]) if "data: " in last else None
        if isinstance(data, dict) and "error" in data:
            kind = data["error"]["type"]
            named = api == "openai" or last.startswith("event: error")
            return f"200, then error event {kind}" + ("" if named else " (unnamed)")
        return "200, complete" if "[DONE]" in r.text or "message_stop" in r.text else "200, cut"
    shape = "" if _json_shaped(api, r) else " (not shaped)"
    kind = r.json()["error"]["type"] if not shape else "?"
    after = r.headers.get("retry-after")
    return f"{r.status_code} {kind}{shape}" + (f", Retry-After {after}" if after else "")


def faults(stub: StubUpstream) -> tuple[str, dict[str, int]]:
    rows = []
    totals = {"requests": 0, "hangs": 0, "extra calls": 0, "leaks": 0}
    for label, fault, timeout in FAULTS:
        base = f"http://127.0.0.1:{free_port()}/v1" if fault == "refused" else stub.base_url
        for mode in MODES:
            app = create_app(backend(base, fault, mode, timeout), first_event_wait=5.0)
            cells: list[str] = []
            calls: set[int] = set()
            with running(app) as server:
                for api in APIS:
                    for stream in (False, True):
                        before = stub.calls(fault)
                        r, hung = _request(server.url, api, stream)
                        totals["requests"] += 1
                        totals["hangs"] += hung
                        calls.add(stub.calls(fault) - before)
                        if r is None:
                            cells.append("hung")
                            continue
                        totals["leaks"] += any(s in r.text for s in ("sk-reliability", base))
                        cells.append(_outcome(api, stream, r))
            made = "—" if fault == "refused" else ", ".join(str(c) for c in sorted(calls))
            totals["extra calls"] += fault != "refused" and calls != {1}
            rows.append([label, mode, *cells, made])
    head = ["upstream fault", "mode", "OpenAI whole", "OpenAI stream", "Anthropic whole"]
    head += ["Anthropic stream", "upstream calls per request"]
    summary = (
        f"{totals['requests']} requests: **{totals['hangs']} hangs** (bound {HANG:.0f} s), "
        f"**{totals['extra calls']} faults with other than 1 upstream call per request**, "
        f"{totals['leaks']} answers naming the upstream's URL or key."
    )
    return summary + "\n\n" + markdown_table(head, rows), totals


def _request(url: str, api: str, stream: bool) -> tuple[httpx.Response | None, bool]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "weather?"}]}
    if api == "anthropic":
        body["max_tokens"] = 50
    fn = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    body["tools"] = [fn if api == "openai" else {"name": "get_weather", "input_schema": {}}]
    try:
        r = httpx.post(url + PATHS[api], json={**body, "stream": stream}, timeout=HANG)
    except httpx.TimeoutException:
        return None, True
    return r, False


# -- the run -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short soak, nothing written")
    parser.add_argument("--soak-seconds", type=float, default=60.0)
    args = parser.parse_args()
    seconds = 5.0 if args.quick else args.soak_seconds
    stub = StubUpstream().start()
    started = time.monotonic()
    try:
        fuzz = fuzz_section()
        bad, bad_totals = asyncio.run(malformed(stub))
        print("malformed requests:", bad_totals, file=sys.stderr, flush=True)
        fault, fault_totals = faults(stub)
        print("upstream faults:", fault_totals, file=sys.stderr, flush=True)
    finally:
        stub.stop()
    soaked, soak_totals = soak(seconds)
    print("soak:", soak_totals, file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    sections = [
        ("Parser fuzz", fuzz),
        ("Malformed requests", bad),
        ("Upstream faults", fault),
        ("Soak", soaked),
        (
            "How this was run",
            f"`python bench/reliability.py` on loopback, {time.monotonic() - started:.0f} s, "
            f"{os.cpu_count()} cores, load average {load:.1f} at the end.",
        ),
    ]
    for heading, text in sections:
        print(f"\n## {heading}\n\n{text}")
    if not args.quick:
        path = write_result("reliability", "Reliability of `parlay serve`", sections)
        print(f"\nwritten to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
