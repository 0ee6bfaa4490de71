"""An image from each client that can send one, through `parlay serve` in both
modes: Claude Code reading a PNG with its Read tool (an `image` block inside a
`tool_result`), Codex CLI's `view_image` (an `input_image` inside a
`function_call_output`), `codex exec -i` (an `input_image` in the first message) and
simonw/llm's `-a` (a chat-completions `image_url` part).
Before issue 49 each was a 400 and the session died; now the session goes on, and the
upstream is handed the image (native) or told an image was there (prompted)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from client_harness import Proxy, clean_env, node_client
from client_upstream import Script, Step, Upstream
from test_agent_clis import CODEX_CONFIG

ANSWER = "I looked at the picture (done-image)."
# What reaches the upstream once the image is in the conversation: the image itself in
# native mode, the engine's placeholder in prompted mode. Neither is in any prompt.
SEEN = {"native": "data:image/png;base64,", "prompted": "this model reads text only"}


def png(path: Path) -> Path:
    """A real 4x4 PNG (clients check the bytes before sending an image)."""
    raw = b"".join(b"\0" + b"\xff\x00\x00" * 4 for _ in range(4))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)
    data = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + data)
    return path


def image_script(tool: str, argument: str, picture: Path, mode: str) -> Script:
    return Script(steps=(Step(tool, {argument: str(picture)}, SEEN[mode]),), answer=ANSWER)


def upstream_saw(upstream: Upstream, mode: str) -> bool:
    return any(SEEN[mode] in json.dumps(body.get("messages", [])) for body in upstream.requests)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def test_claude_code_reads_a_png_and_goes_on(proxy: Proxy, upstream: Upstream, work: Path) -> None:
    claude = node_client("claude")
    picture = png(work / "red.png")
    upstream.play(image_script("Read", "file_path", picture, proxy.mode))
    env = {
        **clean_env(work.parent / "home"),
        "ANTHROPIC_BASE_URL": proxy.url,
        "ANTHROPIC_API_KEY": proxy.key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    prompt = "Read red.png with your Read tool and tell me what it shows."
    done = subprocess.run(
        [str(claude), "-p", prompt, "--allowedTools", "Read", "--output-format", "json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result.get("is_error") is False, result
    assert "done-image" in result["result"]
    assert upstream_saw(upstream, proxy.mode)


def codex(proxy: Proxy, work: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    home = work.parent / "home"
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=proxy.url))
    env = {**clean_env(home), "PARLAY_API_KEY": proxy.key}
    return subprocess.run(
        [str(node_client("codex")), "exec", "--skip-git-repo-check",
         "--dangerously-bypass-approvals-and-sandbox", *arguments],
        cwd=work, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_codex_exec_dash_i_sends_an_image_and_gets_an_answer(
    proxy: Proxy, upstream: Upstream, work: Path
) -> None:
    picture = png(work / "red.png")
    upstream.play(None)  # a plain answer: the image is in the first request
    # `-i` takes several files: the prompt goes before it.
    done = codex(proxy, work, "What is in this picture?", "-i", str(picture))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "OK." in done.stdout
    assert upstream_saw(upstream, proxy.mode)


def test_codex_view_image_result_goes_back_to_the_model(
    proxy: Proxy, upstream: Upstream, work: Path
) -> None:
    picture = png(work / "red.png")
    upstream.play(image_script("view_image", "path", picture, proxy.mode))
    done = codex(proxy, work, "Look at red.png with your view_image tool and describe it.")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "done-image" in done.stdout
    assert upstream_saw(upstream, proxy.mode)


def test_simonw_llm_attaches_an_image_over_chat_completions(
    proxy: Proxy, upstream: Upstream, work: Path
) -> None:
    """`llm -a red.png`: an `image_url` part with a data: URL, from a model marked vision."""
    config = work.parent / "llm"
    config.mkdir()
    (config / "extra-openai-models.yaml").write_text(
        f"- model_id: parlay\n  model_name: parlay\n  api_base: {proxy.url}/v1\n"
        "  api_key_name: parlay\n  vision: true\n"
    )
    (config / "keys.json").write_text(json.dumps({"parlay": proxy.key}))
    picture = png(work / "red.png")
    upstream.play(None)
    llm = Path(sys.executable).with_name("llm")
    done = subprocess.run(
        [str(llm), "-m", "parlay", "-a", str(picture), "--no-stream", "What is in this picture?"],
        cwd=work, env={**clean_env(work.parent / "home"), "LLM_USER_PATH": str(config),
                       "LLM_LOAD_PLUGINS": ""},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "OK." in done.stdout
    assert upstream_saw(upstream, proxy.mode)
