"""Which agent clients work through `parlay serve`: runs the client suite (tests/clients)
and writes its outcome as a table, client x protocol x mode x streaming, with each
client's version, to bench/results/clients.md.

    python -m bench.clients

A row passes when the client did the whole task (two tools that really ran, then the
answer) through a real `parlay serve` in front of the scripted upstream.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

from bench._table import markdown_table, write_result

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tests" / "clients" / "node" / "package.json"

# test function -> (client, the package whose version it is, protocol)
CLIENTS: dict[str, tuple[str, str, str]] = {
    "test_openai_chat_completions": ("openai SDK", "openai", "chat completions"),
    "test_openai_responses": ("openai SDK", "openai", "responses"),
    "test_anthropic_messages": ("anthropic SDK", "anthropic", "messages"),
    "test_openai_agents_chat_completions_model": (
        "openai-agents, OpenAIChatCompletionsModel", "openai-agents", "chat completions",
    ),
    "test_openai_agents_default_model": (
        "openai-agents, default model", "openai-agents", "responses",
    ),
    "test_pydantic_ai_openai_chat_model": (
        "pydantic-ai, OpenAIChatModel", "pydantic-ai-slim", "chat completions",
    ),
    "test_langchain_chat_openai": ("LangChain ChatOpenAI", "langchain-openai", "chat completions"),
    "test_langchain_chat_openai_responses": (
        "LangChain ChatOpenAI(use_responses_api=True)", "langchain-openai", "responses",
    ),
    "test_langchain_chat_anthropic": ("LangChain ChatAnthropic", "langchain-anthropic", "messages"),
    "test_simonw_llm": ("simonw/llm CLI", "llm", "chat completions"),
    "test_claude_code": ("Claude Code", "@anthropic-ai/claude-code", "messages"),
    "test_codex_cli": ("Codex CLI", "@openai/codex", "responses"),
}  # fmt: skip
_CASE = re.compile(
    r"^(?P<test>test_\w+)\[(?P<mode>native|prompted)(?:-(?P<how>whole|streamed))?\]$"
)


def version(package: str) -> str:
    if package.startswith("@"):
        return str(json.loads(NODE.read_text())["dependencies"][package])
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def rows_from(report: Path) -> list[list[object]]:
    rows: list[list[object]] = []
    for case in ET.parse(report).getroot().iter("testcase"):
        found = _CASE.match(case.get("name", ""))
        if not found or found["test"] not in CLIENTS:
            continue
        client, package, protocol = CLIENTS[found["test"]]
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcome = "skipped" if skipped else ("FAIL" if failed else "pass")
        streaming = {"whole": "no", "streamed": "yes", None: "yes (always)"}[found["how"]]
        seconds = f"{float(case.get('time', 0)):.1f}"
        rows.append(
            [client, version(package), protocol, found["mode"], streaming, outcome, seconds]
        )
    return sorted(rows, key=lambda r: (str(r[0]), str(r[3]), str(r[4])))


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "clients.xml"
        command = [sys.executable, "-m", "pytest", "tests/clients", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={report}", "-k", "not test_client_docs"]  # fmt: skip
        code = subprocess.run(command, cwd=ROOT, check=False).returncode
        rows = rows_from(report)
    headers = ["client", "version", "protocol", "mode", "streaming", "outcome", "seconds"]
    table = markdown_table(headers, rows)
    print(table)
    passed = sum(1 for r in rows if r[5] == "pass")
    how = (
        "Each row: the client, unmodified, does a task of three rounds through a real "
        "`parlay serve` in front of a scripted upstream (tests/clients/client_upstream.py): "
        "call a tool, read its result, call a second tool, answer. It passes when both tools "
        "really ran (they move a file) and the answer reached the client. `native`: tools "
        "passed through to the upstream; `prompted`: the upstream is treated as plain chat "
        "and writes action text, so the client sees the engine's parse and re-encoding."
    )
    write_result(
        "clients",
        "Agent clients through parlay serve",
        [("How", how), (f"Outcome: {passed} of {len(rows)} pass", table)],
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
