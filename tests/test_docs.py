"""The documentation site builds with warnings as errors, and covers what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _nav_files(nav: list[object]) -> list[str]:
    files: list[str] = []
    for entry in nav:
        if isinstance(entry, dict):
            for value in entry.values():
                files.extend(_nav_files(value) if isinstance(value, list) else [str(value)])
        else:
            files.append(str(entry))
    return files


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The API reference is generated from the docstrings, not written by hand.
    session_page = (site / "reference" / "session" / "index.html").read_text()
    assert "SessionToolCallingProtocol" in session_page and "call_tool" in session_page
    assert "add_response" in (site / "reference" / "store" / "index.html").read_text()


def test_every_page_is_in_the_nav_and_exists() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    listed = set(_nav_files(config["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert listed == on_disk
