"""The documentation site builds with warnings as errors, and covers what it promises."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
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


def _python_blocks() -> list[tuple[str, int, str]]:
    blocks = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        lines = page.read_text().splitlines()
        start = None
        for number, line in enumerate(lines):
            if start is None and line.strip() == "```python":
                start = number + 1
            elif start is not None and line.strip() == "```":
                source = "\n".join(lines[start:number])
                blocks.append((page.name, start + 1, textwrap.dedent(source)))
                start = None
    return blocks


@pytest.mark.parametrize(
    ("page", "line", "source"),
    _python_blocks(),
    ids=lambda v: str(v) if isinstance(v, (str, int)) and len(str(v)) < 30 else "",
)
def test_code_samples_compile_and_name_what_parlay_exports(
    page: str, line: int, source: str
) -> None:
    # Samples need a model or a server to run; what rots silently is the API they name.
    tree = ast.parse(source, f"{page}:{line}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("parlay"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}"
                ), f"{page}:{line} imports {alias.name} from {node.module}, which has no such name"
