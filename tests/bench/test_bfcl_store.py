"""The stores kept in git are gzipped; the pages docs link to still regenerate from them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.bfcl import after, dev, knob
from bench.bfcl.store import Store, compact, packed

RESULTS = Path(dev.__file__).resolve().parents[1] / "results"


def _row(question: str, right: bool) -> dict[str, object]:
    return {"model": "qwen", "system": "parlay", "category": "multiple",
            "question": question, "config": "c", "right": right}  # fmt: skip


def test_a_store_reads_its_gzipped_rows_then_the_rows_appended_since(tmp_path: Path) -> None:
    path = tmp_path / "dev.jsonl"
    with gzip.open(packed(path), "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(_row("q1", False)) + "\n" + json.dumps(_row("q2", True)) + "\n")
    store = Store(path)
    store.append(_row("q1", True))  # asked again since: the later line wins
    loaded = store.load()
    assert {k[3]: row["right"] for k, row in loaded.items()} == {"q1": True, "q2": True}
    compact(path)
    assert not path.exists() and Store(path).load() == loaded


def test_the_dev_page_regenerates_from_its_gzipped_store(tmp_path: Path) -> None:
    page = tmp_path / "bfcl-dev.md"
    dev.write_page(Store(dev.STORE), page)
    assert page.read_text() == (RESULTS / "bfcl-dev.md").read_text()


def test_the_knob_page_regenerates_from_its_gzipped_store() -> None:
    text = knob.render(knob.load(knob.STORE)) + "\n"
    assert text == (RESULTS / "bfcl-knob.md").read_text()


def test_the_after_page_regenerates_from_its_gzipped_store() -> None:
    tags = "stop25,stop25b,stop26,stop26b,stop26c,stop28,stop28b,stop29"
    text = after.render(list(Store(after.STORE).load().values()), tags)
    assert text == (RESULTS / "bfcl-after.md").read_text()
