"""Claude Code and Codex CLI through a real `parlay serve --tools prompted` in front of a
scripted llama.cpp-like upstream with a small window (it answers `/props`,
`/apply-template` and `/tokenize`, four characters a token): at a window that fits once
parlay has shrunk its own additions, the task runs; at one too small for the client's own
system prompt, each client gets its own overflow error, which names the cause and never
"the upstream"."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from client_harness import clean_env, free_port, node_client, serve
from client_upstream import Upstream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_agent_clis import CODEX_CONFIG, PROMPT, check_ran, shell_script


class WindowedUpstream(Upstream):
    """The scripted upstream with a window, a template and a tokenizer, as llama.cpp's."""

    n_ctx: int = 4096
    prompts: list[int] = []  # noqa: RUF012 (set per instance by the fixture)
    roles: list[list[str]] = []  # noqa: RUF012

    async def props(self, request: Request) -> Response:
        return JSONResponse({"default_generation_settings": {"n_ctx": self.n_ctx}})

    async def apply_template(self, request: Request) -> Response:
        body = await request.json()
        text = "".join(f"<|{m['role']}|>{m.get('content') or ''}\n" for m in body["messages"])
        return JSONResponse({"prompt": text})

    async def tokenize(self, request: Request) -> Response:
        content = (await request.json())["content"]
        return JSONResponse({"tokens": list(range(len(content) // 4))})

    async def windowed_chat(self, request: Request) -> Response:
        body = await request.json()
        chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
        self.prompts.append(chars // 4)
        self.roles.append([m["role"] for m in body.get("messages", [])])
        return await self.chat(request)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.windowed_chat, methods=["POST"]),
                Route("/props", self.props, methods=["GET"]),
                Route("/apply-template", self.apply_template, methods=["POST"]),
                Route("/tokenize", self.tokenize, methods=["POST"]),
            ]
        )


@pytest.fixture
def windowed(request: pytest.FixtureRequest) -> Iterator[tuple[WindowedUpstream, str]]:
    """The windowed upstream (its window from the test's parameter) and a `parlay serve`
    in prompted mode in front of it (a new one each time: it asks the window once)."""
    upstream = WindowedUpstream()
    upstream.n_ctx = request.param
    upstream.prompts = []
    upstream.roles = []
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(upstream.app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    upstream.url = f"http://127.0.0.1:{port}/v1"
    proc, proxy = serve(upstream.url, "prompted")
    try:
        yield upstream, proxy.url
    finally:
        proc.terminate()
        proc.wait(10)
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def claude(url: str, work: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **clean_env(work.parent / "home"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-parlay",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    return subprocess.run(
        [str(node_client("claude")), "-p", PROMPT, "--allowedTools", "Bash",
         "--output-format", "json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def codex(url: str, work: Path) -> subprocess.CompletedProcess[str]:
    home = work.parent / "home"
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=url))
    env = {**clean_env(home), "PARLAY_API_KEY": "sk-parlay"}
    return subprocess.run(
        [str(node_client("codex")), "exec", "--skip-git-repo-check",
         "--dangerously-bypass-approvals-and-sandbox", PROMPT],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip


# Claude Code 2.1.197's first request under the contract is ~33k tokens of four
# characters with its examples and full descriptions, ~8k with only their signatures.
@pytest.mark.parametrize("windowed", [16384], indirect=True)
def test_claude_code_on_a_small_window_runs_once_parlay_has_shrunk_its_own_additions(
    windowed: tuple[WindowedUpstream, str], work: Path
) -> None:
    upstream, url = windowed
    upstream.play(shell_script("Bash", "command"))
    done = claude(url, work)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    check_ran(work)
    # Sent without the example turns (which come between the system prompt and the
    # client's first message), within the window less the reply's reserve (a quarter).
    assert upstream.roles[0][:2] == ["system", "user"] and "assistant" not in upstream.roles[0]
    assert max(upstream.prompts) <= 16384 - 4096


@pytest.mark.parametrize("windowed", [2048], indirect=True)
def test_claude_code_over_the_window_is_told_its_prompt_is_too_long(
    windowed: tuple[WindowedUpstream, str], work: Path
) -> None:
    upstream, url = windowed
    upstream.play(shell_script("Bash", "command"))
    done = claude(url, work)
    said = done.stdout + done.stderr
    assert "prompt is too long" in said.lower(), said[-2000:]
    assert "upstream" not in said
    assert upstream.prompts == []  # nothing was cut to make it fit


@pytest.mark.parametrize("windowed", [2048], indirect=True)
def test_codex_over_the_window_gets_context_length_exceeded(
    windowed: tuple[WindowedUpstream, str], work: Path
) -> None:
    upstream, url = windowed
    upstream.play(shell_script("exec_command", "cmd"))
    done = codex(url, work)
    said: Any = done.stdout + done.stderr
    assert done.returncode != 0
    assert "context window" in said.lower() or "context_length_exceeded" in said, said[-3000:]
    assert "upstream refused" not in said
    assert upstream.prompts == []


@pytest.mark.parametrize("windowed", [8192], indirect=True)
def test_codex_on_a_small_window_runs_once_parlay_has_shrunk_its_own_additions(
    windowed: tuple[WindowedUpstream, str], work: Path
) -> None:
    upstream, url = windowed
    upstream.play(shell_script("exec_command", "cmd"))
    done = codex(url, work)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "done-alpha-archived" in done.stdout
    check_ran(work)
    # The example turns went (they come between the instructions and the client's first
    # message); what was sent stayed within the window less the reply's reserve.
    assert "assistant" not in upstream.roles[0], upstream.roles[0]
    assert max(upstream.prompts) <= 8192 - 2048
