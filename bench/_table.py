"""A benchmark's figures (percentiles, a process's CPU), its table, and its page under
bench/results/."""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its live children (the workers)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(c)) for c in children)


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
