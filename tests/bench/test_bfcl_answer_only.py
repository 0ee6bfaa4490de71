"""The answer-only probe pairs the shipped engine's fallbacks with a run of a change to
them, on the questions that fell back, and counts what the user would read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.bfcl.probes import answer_only
from bench.bfcl.store import Store


def row(question: str, tag: str, rules: list[str], text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "smollm2",
        "system": "parlay",
        "category": "live_irrelevance",
        "question": question,
        "config": tag,
        "tag": tag,
        "half": "tune",
        "right": True,
        "abstained": True,
        "calls": [],
        "text": text,
        "retries": [{"reason": r} for r in rules if r == "forced_call"],
        "rules": rules,
        "completion_tokens": 10,
        "seconds": 1.0,
        **extra,
    }


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    path = tmp_path / "dev.jsonl"
    monkeypatch.setattr(answer_only, "STORE", path)
    return Store(path)


FELL_BACK = ["forced_call", "words_fallback"]
ECHOED = [*FELL_BACK, "echo_filter", "words_after_drop"]


def test_only_the_questions_that_fell_back_are_listed(store: Store) -> None:
    store.append(row("q1", "stop16", ECHOED, ""))
    store.append(row("q2", "stop16", [], "Hello."))
    store.append(row("q3", "stop16", FELL_BACK, "No tool for that.", derived=True))
    assert answer_only.questions(store.load(), "tune", "smollm2") == ["q1"]


def test_the_report_counts_echoes_empty_turns_and_generations(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    store.append(row("q1", "stop16", ECHOED, ""))
    store.append(row("q2", "stop16", FELL_BACK, "Sorry."))
    store.append(row("q3", "stop16", [], "Hello."))
    store.append(row("q1", "base", ECHOED, ""))
    store.append(row("q3", "base", [], "Hello."))
    store.append(row("q3", "new", [], "Hello."))
    looped = ["stopped a reply in a loop: it repeated 'a' 150 times"]
    store.append(row("q2", "base", FELL_BACK, "Sorry.", notes=looped))
    store.append(row("q1", "new", FELL_BACK, "I can't tell."))
    store.append(row("q2", "new", FELL_BACK, "", right=False, abstained=True))
    answer_only.report("new", "base", [("tune", "smollm2")])
    out = capsys.readouterr().out
    assert "2 questions asked again" in out
    assert "| a reply dropped as an echo | 1 | 0 |" in out
    assert "| ended with no text | 1 | 1 |" in out
    # Two generations each, and one more after the drop.
    assert "| generations | 5 | 4 |" in out
    assert "| a reply stopped in a loop | 1 | 0 |" in out
    assert "right or abstained changed: 1 q2" in out


def test_a_wrong_command_line_says_how_to_call_it() -> None:
    with pytest.raises(SystemExit, match="answer_only"):
        answer_only.main(["report", "new", "base", "tune"])
