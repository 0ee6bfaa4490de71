"""The outcomes of the development benchmark, one JSON line each, appended as they come.

An outcome is keyed by (model, system, category, question, config): `config` is a hash
of everything that shapes the answer (the system's settings, the model file, the
context size, the tag) and nothing that does not (not the commit, not the date), so a
run stopped on one commit resumes on the next. A line is written and flushed to disk
as soon as its outcome is known; a line cut by a crash is skipped on reading, and when a
key appears twice the later line wins (a re-asked failed request).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

Key = tuple[str, str, str, str, str]
KEY_FIELDS = ("model", "system", "category", "question", "config")


def config_key(config: Mapping[str, Any]) -> str:
    """A short, stable hash of a JSON-able configuration (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:12]


def key_of(outcome: Mapping[str, Any]) -> Key:
    model, system, category, question, config = (str(outcome[f]) for f in KEY_FIELDS)
    return model, system, category, question, config


class Store:
    """A JSON-lines file of outcomes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[Key, dict[str, Any]]:
        out: dict[Key, dict[str, Any]] = {}
        if not self.path.is_file():
            return out
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    outcome = json.loads(line)
                    out[key_of(outcome)] = outcome
                except (ValueError, KeyError) as exc:
                    # A half-written last line from a run that was killed.
                    print(f"{self.path}:{number}: skipped ({exc})", file=sys.stderr)
        return out

    def append(self, outcome: Mapping[str, Any]) -> None:
        key_of(outcome)  # refuse a record that could not be found again
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(outcome, ensure_ascii=False, sort_keys=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def by_question(
    outcomes: Mapping[Key, dict[str, Any]],
    model: str,
    half: str,
    system: str,
    tag: str,
    *,
    real_only: bool = False,
) -> dict[str, dict[str, Any]]:
    """One system's outcomes of one model, half and tag (among `outcomes`, as
    `Store.load` gives them), by question id; `real_only`: not those derived from
    another system's."""
    return {
        row["question"]: row
        for row in outcomes.values()
        if (row["model"], row["half"], row["system"], row.get("tag")) == (model, half, system, tag)
        and not (real_only and row.get("derived"))
    }
