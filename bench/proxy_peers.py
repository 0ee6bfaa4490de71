"""The processes bench/proxy.py measures: the stub upstream, parlay serve, LiteLLM's proxy
and claude-code-router, each installed on first use under ~/.cache/parlay-bench-proxy and
started on the cores it is given."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CACHE = Path.home() / ".cache" / "parlay-bench-proxy"
CCR_VERSION = "2.0.0"  # the version issue 53 measured first
KEY, MODEL = "sk-bench-key", "bench"

# With --pin: the proxy measured on a core of its own, the stub and this client on the
# other, so neither's CPU nor the scheduler's switching between them lands in the proxy's
# figures (the 2-worker target keeps every core).
PROXY_CORES: set[int] | None = None
HARNESS_CORES: set[int] | None = None


def pin_cores() -> None:
    """This process (the client) and the stub on all cores but the last, the proxy on it."""
    global PROXY_CORES, HARNESS_CORES
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= 2:
        PROXY_CORES, HARNESS_CORES = {cores[-1]}, set(cores[:-1])
        os.sched_setaffinity(0, HARNESS_CORES)


def pinned(cores: set[int] | None) -> Any:
    return None if cores is None else (lambda: os.sched_setaffinity(0, cores))


def start(
    cmd: list[str], port: int, log: Path, cores: set[int] | None = None, **kw: Any
) -> subprocess.Popen[bytes]:
    """`cmd` started on `cores`, once it listens on `port` (its stderr in `log`)."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=log.open("wb"), preexec_fn=pinned(cores), **kw
    )
    deadline = time.monotonic() + 180
    while proc.poll() is None and time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                time.sleep(1.0)  # a worker or two may still be starting behind the port
                return proc
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"did not listen within 180 s (exit code {proc.poll()}; see {log})")


def parlay(stub: str, port: int, tools: str, workers: int, src: str = "") -> Any:
    """`parlay serve`; from the source tree `src` (another checkout's src/) when given."""
    cmd = [str(Path(sys.executable).parent / "parlay"), "serve", "--upstream-url", stub,
           "--tools", tools, "--upstream-model", MODEL, "--client-key", KEY, "--port", str(port),
           "--workers", str(workers)]  # fmt: skip
    env = {**os.environ, **({"PYTHONPATH": src} if src else {})}
    log = CACHE / f"parlay-{tools}-{workers}{bool(src)}.log"
    return start(cmd, port, log, PROXY_CORES if workers == 1 else None, env=env)


def litellm(stub: str, port: int) -> subprocess.Popen[bytes]:
    venv = CACHE / "litellm-venv"
    if not (venv / "bin" / "litellm").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([venv / "bin" / "pip", "install", "-q", "litellm[proxy]"], check=True,
                       capture_output=True)  # fmt: skip
    config = CACHE / "litellm.yaml"
    config.write_text(json.dumps({"model_list": [{"model_name": MODEL, "litellm_params": {
        "model": f"openai/{MODEL}", "api_base": stub, "api_key": "sk-stub"}}],
        "litellm_settings": {"drop_params": True, "telemetry": False},
        "router_settings": {"disable_cooldowns": True}}))  # fmt: skip
    env = {**os.environ, "LITELLM_MASTER_KEY": KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES": "True"}  # fmt: skip
    cmd = [str(venv / "bin" / "litellm"), "--config", str(config), "--port", str(port)]
    return start(cmd, port, CACHE / "litellm.log", PROXY_CORES, env=env, cwd=CACHE)


def ccr(stub: str, port: int) -> subprocess.Popen[bytes]:
    folder = CACHE / "ccr"
    cli = folder / "node_modules/@musistudio/claude-code-router/dist/cli.js"
    if not cli.exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder),
                        f"@musistudio/claude-code-router@{CCR_VERSION}"], check=True,
                       capture_output=True)  # fmt: skip
    home = CACHE / "ccr-home"
    (home / ".claude-code-router").mkdir(parents=True, exist_ok=True)
    (home / ".claude-code-router" / "config.json").write_text(json.dumps({
        "LOG": False, "HOST": "127.0.0.1", "PORT": port, "APIKEY": KEY, "Router": {
            "default": f"stub,{MODEL}"}, "Providers": [{"name": "stub", "api_key": "sk-stub",
            "api_base_url": stub + "/chat/completions", "models": [MODEL]}]}))  # fmt: skip
    env = {**os.environ, "HOME": str(home)}
    return start(["node", str(cli), "start"], port, CACHE / "ccr.log", PROXY_CORES, env=env)
