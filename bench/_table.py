"""Printing a benchmark table and keeping it under bench/results/."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def markdown_table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(name: str, title: str, sections: list[tuple[str, str]]) -> Path:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"Python {sys.version.split()[0]}, {platform.machine()}, {platform.system()}"
    body = [f"# {title}", "", f"Run {stamp} on {machine}.", ""]
    for heading, text in sections:
        body += [f"## {heading}", "", text, ""]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text("\n".join(body))
    return path
