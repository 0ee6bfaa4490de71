"""`parlay prompt --json` reports which model answered and why its reply ended: a session
saw `"model": null, "finish_reason": "length"` for the whole answer "The answer is 579.",
which SmolLM2 had said four times before parlay's loop guard stopped it."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_parlay import run

from parlay.backends.catalogue import SMOLLM2_FILE


def test_json_reports_the_model_and_repetition_for_an_answer_the_loop_guard_stopped(
    tmp_path: Path,
) -> None:
    done = run(["prompt", "What is 123 + 456?", "-m", "looping", "--json"], tmp_path / "l.db")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["text"] == "The answer is 579."
    assert report["finish_reason"] == "repetition"
    assert report["model"] is not None and report["model"].endswith(SMOLLM2_FILE)


def test_json_reports_stop_and_the_model_for_an_answer_the_model_ended(tmp_path: Path) -> None:
    done = run(["prompt", "hi", "--json"], tmp_path / "l.db")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["model"], report["finish_reason"]) == ("scripted", "stop")
