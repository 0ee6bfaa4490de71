"""The documentation site builds with warnings as errors, and every example runs as
written (tests/docs_blocks.py says how blocks are marked)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from docs_blocks import (
    PAGES,
    Block,
    answer_lines,
    blocks,
    chains,
    missing_from_answer,
    run,
    write_files,
)

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


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "python"], ids=str)
def test_python_samples_compile_and_name_what_parlay_exports(block: Block) -> None:
    tree = ast.parse(block.source, block.where)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("parlay"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}"
                ), f"{block.where} imports {alias.name} from {node.module}: no such name"


def test_a_block_left_out_says_why() -> None:
    for block in ALL_BLOCKS:
        if block.mode == "skip":
            assert len(block.reason) > 10, f"{block.where}: say why the block is not run"


def test_an_answer_a_model_example_expects_is_one_its_page_shows_the_reader() -> None:
    for block in ALL_BLOCKS:
        for value in block.expects:
            assert value in block.source + block.shows, (
                f"{block.where} expects {value!r} in its answer but does not show it"
            )


def test_only_examples_run_on_the_embedded_model_expect_an_answer() -> None:
    checked = [
        block
        for page in PAGES
        for chain in chains(blocks(page))
        if chain[0].mode == "model"
        for block in chain
    ]
    for block in ALL_BLOCKS:
        assert not block.expects or block in checked, (
            f"{block.where} expects an answer but is not run on the embedded model"
        )


def test_a_marker_names_the_values_the_answer_must_carry(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '<!-- test: model expects "5555" "not found" -->\n```python\nprint(1)\n```\n\n'
        "It prints:\n\n```text\nThe answer is 5555.\n```\n"
        "<!-- test: skip needs a key for a hosted model -->\n```python\nprint(2)\n```\n"
    )
    first, shown, skipped = blocks(page)
    assert (first.mode, first.expects, first.reason) == ("model", ("5555", "not found"), "")
    assert first.shows == "The answer is 5555.\n" and shown.lang == "text"
    assert (skipped.expects, skipped.reason) == ((), "needs a key for a hosted model")


def test_a_value_printed_only_in_a_tool_result_is_not_taken_for_the_answer() -> None:
    printed = (
        "The order is on its way.\n"
        "(AssistantMessage(content='', tool_calls=(...)), ToolResult(call_id='c1', "
        "name='order_status', output='shipped', error=None))\n"
    )
    assert "shipped" not in answer_lines(printed)
    chain = [Block(page="p.md", line=1, lang="python", source="", expects=("shipped",))]
    assert missing_from_answer(chain, printed) == ["shipped"]
    assert missing_from_answer(chain, "It has shipped.\n" + printed) == []


def _run_page(page: Path, tmp_path: Path, *, model: bool) -> None:
    page_blocks = blocks(page)
    write_files(page_blocks, tmp_path)
    wanted = "model" if model else "run"
    ran = [c for c in chains(page_blocks) if c[0].mode == wanted]
    if not ran:
        pytest.skip(f"{_page_id(page)} has no {'model ' if model else ''}blocks")
    for chain in ran:
        stdout = run(chain, tmp_path, model=model, timeout=600 if model else 120)
        missing = missing_from_answer(chain, stdout)
        assert not missing, f"{chain[0].where}: the answer does not carry {missing}:\n{stdout}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_examples_run_as_written(page: Path, tmp_path: Path) -> None:
    _run_page(page, tmp_path, model=False)


@pytest.mark.model
@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_examples_run_on_the_embedded_model_and_answer_with_the_tools_result(
    page: Path, tmp_path: Path
) -> None:
    _run_page(page, tmp_path, model=True)


def test_a_shell_block_reads_nothing_on_stdin_so_parlay_prompt_sees_only_its_argument(
    tmp_path: Path,
) -> None:
    # Given the answers meant for input(), `parlay prompt "TEXT"` prefixed them to TEXT.
    shell = Block(page="p.md", line=1, lang="bash", source="cat; echo end\n")
    asking = Block(page="p.md", line=1, lang="python", source="print(input('ok? '))\n")
    assert run([shell], tmp_path, model=False, timeout=60) == "end\n"
    assert run([asking], tmp_path, model=False, timeout=60) == "ok? y\n"


def test_a_relative_pythonpath_still_names_this_checkout_in_a_blocks_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", "src")
    block = Block(
        page="p.md", line=1, lang="python", source="import parlay\nprint(parlay.__file__)\n"
    )
    imported = run([block], tmp_path, model=False, timeout=60).strip()
    assert imported == str(ROOT / "src" / "parlay" / "__init__.py")
