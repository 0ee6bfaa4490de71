"""The suite sees what the README installs and nothing this machine kept from earlier work."""

from __future__ import annotations

import os
from pathlib import Path

from parlay.backends import catalogue


def test_the_run_never_sees_a_model_assembled_in_the_users_cache() -> None:
    # Qwen's file, once put together in ~/.cache/parlay, made `parlay models` call it
    # installed here while every fresh machine printed the install line (and went red).
    users_cache = Path.home() / ".cache" / "parlay"
    assert catalogue.cache_dir() != users_cache
    assert catalogue.cache_dir().parent.name.startswith("parlay-test-home-")


def test_the_run_writes_no_log_into_the_users_data_folder() -> None:
    assert Path(os.environ["PARLAY_LOG_DB"]).parent.name.startswith("parlay-test-home-")
