"""`parlay models` lists what -m accepts; `parlay logs -q` searches prompts and answers
(real subprocesses on a scripted model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_parlay import run

from parlay.cli.models import resolve_model
from parlay.errors import ConfigurationError


def test_models_lists_every_form_and_each_example_is_understood(tmp_path: Path) -> None:
    done = run(["models", "--json"], tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    forms = [json.loads(line) for line in done.stdout.splitlines()]
    assert [f["form"] for f in forms] == [
        "embedded", "smollm2", "qwen2.5-coder", "PATH.gguf", "URL", "NAME@URL",
        "openai:NAME", "anthropic:NAME",
    ]  # fmt: skip
    for form in forms[1:]:  # nothing here starts llama.cpp: a model loads on first use
        spec = form["example"].removeprefix("-m ")
        try:
            resolve_model(spec)
        except ConfigurationError as exc:
            # a missing file or key is fine; a form the resolver does not know is not
            assert "not understood" not in str(exc), spec


def test_logs_query_finds_prompts_and_answers(tmp_path: Path) -> None:
    log_db = tmp_path / "log.db"
    for prompt in ("about walruses", "about pelicans", "100% sure_thing"):
        assert run(["prompt", prompt, "--no-stream"], log_db).returncode == 0
    found = run(["logs", "-q", "PELICAN", "--json"], log_db)
    assert found.returncode == 0, found.stderr
    assert [json.loads(line)["prompt"] for line in found.stdout.splitlines()] == ["about pelicans"]
    # the echo model's answer holds the prompt too: a search on answers finds it as well
    assert "walruses" in run(["logs", "-q", "walruses"], log_db).stdout
    # LIKE's wildcards are searched for as text
    literal = run(["logs", "--query", "0% s", "--json"], log_db).stdout.splitlines()
    assert [json.loads(line)["prompt"] for line in literal] == ["100% sure_thing"]
    assert run(["logs", "-q", "100_", "--json"], log_db).stdout == ""  # not "100%"


@pytest.mark.parametrize("query", ["zebra", "%", "_"])
def test_logs_query_with_no_match_lists_nothing(tmp_path: Path, query: str) -> None:
    log_db = tmp_path / "log.db"
    assert run(["prompt", "about walruses", "--no-stream"], log_db).returncode == 0
    found = run(["logs", "-q", query, "--json"], log_db)
    assert found.returncode == 0 and found.stdout == ""
