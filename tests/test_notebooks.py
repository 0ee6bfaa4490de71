"""The notebooks run top to bottom on the embedded model, so they cannot rot.

Each runs in a fresh kernel through nbclient; a cell that raises (the notebooks assert
protocol facts as they go) fails the test with that cell's error.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

# Notebooks that display a context, whose HTML (parlay.display) must be in the output.
SHOWS_HTML = (
    "01_sessions_and_contexts.ipynb",
    "02_tool_calling_protocol.ipynb",
    "04_branch_compare_replay.ipynb",
)
NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_five_notebooks_without_stored_outputs() -> None:
    assert [p.name[:3] for p in NOTEBOOKS] == ["01_", "02_", "03_", "04_", "05_"]
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


@pytest.mark.model
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_leaves_no_file_beside_itself(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARLAY_LOG_DB", str(tmp_path / "log.db"))
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)  # the embedded model
    notebook = nbformat.read(path, as_version=4)
    # In its own folder, as Jupyter runs it: 02 and 04 once left stock_server.py and
    # planets.json there, in the checkout.
    before = set(path.parent.iterdir())
    client = NotebookClient(
        notebook,
        timeout=int(os.environ.get("PARLAY_NOTEBOOK_CELL_TIMEOUT", "600")),
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name}: {exc}", pytrace=False)
    left = {p.name for p in set(path.parent.iterdir()) - before if p.suffix != ".ipynb"}
    assert not left, f"{path.name} left {sorted(left)} in notebooks/"
    if path.name in SHOWS_HTML:
        html = [
            output["data"]["text/html"]
            for cell in notebook.cells
            for output in cell.get("outputs", [])
            if "text/html" in output.get("data", {})
        ]
        assert any('class="parlay"' in h and "turn user" in h for h in html), path.name
