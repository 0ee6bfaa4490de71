"""Real parts for the gateway test and bench/gateway.py: the scripted upstream and nginx
as processes, replicas of `parlay serve`, and a client running tool conversations.

nginx runs in the foreground (`daemon off`) from a config written into a temp folder,
with its own pid, log and temp paths, so nothing of the machine's nginx is touched. Its
configuration is the one docs/deploy.md shows.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "proxy"))
sys.path.insert(0, str(HERE.parent / "store"))

from postgres_server import find_binaries, postgres_server  # noqa: E402
from proxy_stub import ANSWER, RESULT, free_port  # noqa: E402
from serve_process import stop  # noqa: E402

__all__ = [
    "ANSWER",
    "RESULT",
    "find_binaries",
    "find_nginx",
    "free_port",
    "postgres_server",
]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

# The load balancer in front of the replicas (docs/deploy.md shows the same).
NGINX_CONF = """
worker_processes 1;
daemon off;
{user}
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;

    upstream parlay {{
{servers}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 8m;
        location / {{
            proxy_pass http://parlay;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # one id per client request, the same on a retry: parlay logs it once
            proxy_set_header X-Request-Id $request_id;
            # a replica that died or is draining: the request goes to another
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries 3;
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


# One replica in the `upstream` block: out for 30 s after a failed connection.
SERVER_LINE = "server 127.0.0.1:{port} max_fails=1 fail_timeout=30s;"


def find_nginx() -> str | None:
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )


@contextmanager
def nginx(replica_ports: list[int]) -> Iterator[str]:
    """nginx on a free port balancing over `replica_ports`; yields its URL."""
    binary = find_nginx()
    assert binary is not None
    folder = Path(tempfile.mkdtemp(prefix="parlay-nginx-"))
    port = free_port()
    servers = "\n".join("        " + SERVER_LINE.format(port=p) for p in replica_ports)
    user = "user root;" if os.geteuid() == 0 else ""
    conf = NGINX_CONF.format(folder=folder, port=port, servers=servers, user=user)
    (folder / "nginx.conf").write_text(conf)
    command = [binary, "-p", str(folder), "-c", str(folder / "nginx.conf")]
    command += ["-e", str(folder / "error.log")]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until(lambda: _answers(url + "/health"), proc, "nginx")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def stub_upstream() -> Iterator[str]:
    """The scripted OpenAI-compatible upstream as a process of its own; yields its /v1."""
    port = free_port()
    script = str(HERE.parent / "proxy" / "proxy_stub.py")
    proc = subprocess.Popen([sys.executable, script, str(port)], stdout=subprocess.DEVNULL)
    try:
        _wait_until(lambda: _answers(f"http://127.0.0.1:{port}/", any_status=True), proc, "stub")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.kill()
        proc.wait(10)


@contextmanager
def replica(upstream: str, *extra: str, env: dict[str, str] | None = None) -> Iterator[Any]:
    """One `parlay serve` on a free port over the scripted upstream's "turns" model."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PARLAY_SERVE_")}
    code = "from parlay.cli.app import main; main()"
    command = [sys.executable, "-c", code, "serve", "--upstream-url", upstream]
    command += ["--upstream-model", "turns", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(
        [*command, *extra], env={**clean, **(env or {})}, stderr=subprocess.PIPE
    )
    proc.port = port  # type: ignore[attr-defined]
    proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    try:
        _wait_until(lambda: _answers(proc.url + "/ready"), proc, "parlay serve")  # type: ignore[attr-defined]
        yield proc
    finally:
        stop(proc)


def _answers(url: str, any_status: bool = False) -> bool:
    try:
        status = httpx.get(url, timeout=1).status_code
    except httpx.HTTPError:
        return False
    return any_status or status == 200


def _wait_until(ready: Any, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"{what} did not start: {err[-2000:]}")
        time.sleep(0.05)


async def conversation(
    client: httpx.AsyncClient, number: int, workers: set[str] | None = None
) -> list[dict[str, Any]]:
    """Three turns with a tool through the proxy (a call, its result, then a follow-up);
    the messages the client ends with. Raises on any answer but a 200. `workers` gathers
    the processes that answered."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer about the weather."},
        {"role": "user", "content": f"Conversation {number}: the weather in Paris?"},
    ]
    for turn in range(3):
        body = {"model": "parlay", "messages": messages, "tools": [WEATHER]}
        reply = await client.post("/v1/chat/completions", json=body)
        reply.raise_for_status()
        if workers is not None:
            workers.add(reply.headers.get("x-parlay-worker", ""))
        message = reply.json()["choices"][0]["message"]
        messages.append({k: v for k, v in message.items() if v is not None})
        for call in message.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": RESULT})
        if turn == 1:
            messages.append({"role": "user", "content": f"Conversation {number}: tomorrow?"})
    return messages
