"""Which commit of parlay a benchmark run measures, to tell engines apart in the results."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def head_commit() -> str:
    """`$PARLAY_BENCH_COMMIT` (a run from an exported tree, which has no git), else git's
    short HEAD, else "unknown"."""
    if os.environ.get("PARLAY_BENCH_COMMIT"):
        return os.environ["PARLAY_BENCH_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"
