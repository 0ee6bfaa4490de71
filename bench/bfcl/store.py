"""The outcomes of the development benchmark, one JSON line each, appended as they come.

An outcome is keyed by (model, system, category, question, config): `config` is a hash
of everything that shapes the answer (the system's settings, the model file, the
context size, the tag) and nothing that does not (not the commit, not the date), so a
run stopped on one commit resumes on the next. A line is written and flushed to disk
as soon as its outcome is known; a line cut by a crash is skipped on reading, and when a
key appears twice the later line wins (a re-asked failed request).

The rows kept in git are gzipped beside the store (`bfcl-dev.jsonl.gz`, read first); a
run appends to the plain file, which `gzip` folds in before a commit (`compact`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

Key = tuple[str, str, str, str, str]
KEY_FIELDS = ("model", "system", "category", "question", "config")


def head_commit() -> str:
    """Which commit of parlay answered (it tells engines apart in the results):
    `$PARLAY_BENCH_COMMIT` (a run from an exported tree, which has no git), else git's
    short HEAD, else "unknown"."""
    if os.environ.get("PARLAY_BENCH_COMMIT"):
        return os.environ["PARLAY_BENCH_COMMIT"]
    git, here = ["git", "rev-parse", "--short", "HEAD"], Path(__file__).parent
    try:
        out = subprocess.run(git, capture_output=True, text=True, check=False, cwd=here)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def config_key(config: Mapping[str, Any]) -> str:
    """A short, stable hash of a JSON-able configuration (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:12]


def key_of(outcome: Mapping[str, Any]) -> Key:
    model, system, category, question, config = (str(outcome[f]) for f in KEY_FIELDS)
    return model, system, category, question, config


def packed(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def lines(path: Path) -> Iterator[tuple[str, str]]:
    """Each line of a store, with where it is: the gzipped rows, then the plain file's."""
    for source, opened in ((packed(path), gzip.open), (path, open)):
        if source.is_file():
            with opened(source, "rt", encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    yield f"{source}:{number}", line


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for _, line in lines(path) if line.strip()]


def compact(path: Path) -> None:
    """Fold the plain file's rows into the gzipped ones (`python -m bench.bfcl.store PATH`)."""
    text = "".join(line for _, line in lines(path))
    with gzip.open(packed(path), "wt", encoding="utf-8", compresslevel=9) as handle:
        handle.write(text)
    path.unlink(missing_ok=True)


class Store:
    """A JSON-lines file of outcomes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[Key, dict[str, Any]]:
        out: dict[Key, dict[str, Any]] = {}
        for where, line in lines(self.path):
            if not line.strip():
                continue
            try:
                outcome = json.loads(line)
                out[key_of(outcome)] = outcome
            except (ValueError, KeyError) as exc:
                # A half-written last line from a run that was killed.
                print(f"{where}: skipped ({exc})", file=sys.stderr)
        return out

    def append(self, outcome: Mapping[str, Any]) -> None:
        key_of(outcome)  # refuse a record that could not be found again
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(outcome, ensure_ascii=False, sort_keys=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())


if __name__ == "__main__":
    for name in sys.argv[1:]:
        compact(Path(name))
