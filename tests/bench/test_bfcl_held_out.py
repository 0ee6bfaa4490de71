"""The four categories kept aside for an independent check are refused everywhere,
before any file is opened."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest
from bench.bfcl import data, dev, split

HELD_OUT = ("live_simple", "parallel", "irrelevance", "live_multiple")


def test_the_held_out_set_is_exactly_the_four() -> None:
    assert frozenset(HELD_OUT) == data.HELD_OUT
    assert not set(HELD_OUT) & set(data.DEV_CATEGORIES)


@pytest.fixture
def no_file_opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real_open = builtins.open

    def watch(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def watch_path(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        raise AssertionError(f"opened {self}")

    monkeypatch.setattr(builtins, "open", watch)
    monkeypatch.setattr(Path, "open", watch_path)
    return opened


@pytest.mark.parametrize("category", HELD_OUT)
def test_loading_a_held_out_category_is_refused_without_reading_it(
    category: str, no_file_opened: list[str]
) -> None:
    data.load_category.cache_clear()
    with pytest.raises(data.HeldOutCategoryError, match="kept aside"):
        data.load_category(category)
    with pytest.raises(data.HeldOutCategoryError):
        split.select(category, "validate", 40)
    assert not [f for f in no_file_opened if "BFCL" in f]


@pytest.mark.parametrize("category", HELD_OUT)
def test_the_cli_refuses_a_held_out_category_before_starting_anything(category: str) -> None:
    with pytest.raises(data.HeldOutCategoryError):
        dev.main(["--categories", f"simple_python,{category}", "--models", "smollm2"])


def test_all_runs_only_development_categories() -> None:
    assert dev.categories("all") == data.DEV_CATEGORIES
    assert "parallel" not in data.DEV_CATEGORIES and "irrelevance" not in data.DEV_CATEGORIES
