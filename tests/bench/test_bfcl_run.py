"""The BFCL report: shares over outcomes, and several samples read as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.bfcl import data
from bench.bfcl.run import only, pool
from bench.bfcl.run_report import summarize, table, targets


def outcome(qid: str, category: str, *, right: bool, well_formed: bool = True) -> dict:
    return {
        "question": qid,
        "category": category,
        "well_formed": well_formed,
        "right": right,
        "error_type": "",
        "seconds": 1.0,
    }


def sample(tmp_path: Path, seed: int, outcomes: list[dict]) -> Path:
    path = tmp_path / f"s{seed}.json"
    settings = {"n": 1, "seed": seed, "max_tokens": 8, "categories": ["multiple"]}
    runs = {"qwen": {"parlay json constrained": {o["question"]: o for o in outcomes}}}
    path.write_text(json.dumps({"settings": settings, "runs": runs}))
    return path


def test_shares_count_calls_and_abstentions_apart() -> None:
    summary = summarize(
        [
            outcome("m1", "multiple", right=True),
            outcome("m2", "multiple", right=False, well_formed=False),
            outcome("i1", "live_irrelevance", right=True, well_formed=False),
        ]
    )
    assert (summary["n_call"], summary["n_abstain"]) == (2, 1)
    assert (summary["well_formed"], summary["right"], summary["abstained"]) == (0.5, 0.5, 1.0)


def test_pooled_samples_keep_the_same_question_once_per_seed(tmp_path: Path) -> None:
    first = sample(tmp_path, 1, [outcome("m1", "multiple", right=True)])
    second = sample(tmp_path, 2, [outcome("m1", "multiple", right=False)])
    pooled = pool([first, second])
    outcomes = pooled["runs"]["qwen"]["parlay json constrained"]
    assert set(outcomes) == {"1:m1", "2:m1"}
    assert "| qwen | parlay json constrained | 100 % | 50 % |" in table(pooled)
    assert [s["seed"] for s in pooled["settings"]["samples"]] == [1, 2]


def test_targets_judge_the_current_commit_not_a_bracketed_earlier_one() -> None:
    good = [outcome("m1", "multiple", right=True), outcome("m2", "multiple", right=True)]
    bad = [outcome("m1", "multiple", right=False), outcome("m2", "multiple", right=False)]
    results = {
        "runs": {
            "qwen": {
                "parlay json constrained [abc1234: earlier]": {o["question"]: o for o in good},
                "parlay json constrained": {o["question"]: o for o in bad},
            }
        }
    }
    assert "best configuration `parlay json constrained`" in targets(results)


def test_only_keeps_the_named_questions_of_the_sample() -> None:
    questions = data.sample("live_irrelevance", 10, 4)
    chosen = only(questions, [questions[3].id, questions[1].id])
    assert [q.id for q in chosen] == [questions[1].id, questions[3].id]
    with pytest.raises(SystemExit, match="not in this sample: simple_python_0"):
        only(questions, ["simple_python_0"])


def test_each_model_runs_at_the_floor_parlay_ships_for_it_unless_a_config_says() -> None:
    from bench.bfcl.models import Model
    from bench.bfcl.run_configs import engine_config, make_backend

    from parlay.backends.local import LlamaServer
    from parlay.engine.checks.confidence import DEFAULT_CALL_CONFIDENCE
    from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE

    server = LlamaServer(Path("unused.gguf"))  # never started: only its URL is read
    smollm2 = Model("smollm2", "SmolLM2", Path("s.gguf"), EMBEDDED_MIN_CALL_CONFIDENCE)
    qwen = Model("qwen", "Qwen", Path("q.gguf"))
    shipped = engine_config("json", True)
    assert (
        make_backend(shipped, server, smollm2).min_call_confidence == EMBEDDED_MIN_CALL_CONFIDENCE
    )
    assert make_backend(shipped, server, qwen).min_call_confidence == DEFAULT_CALL_CONFIDENCE
    other = engine_config("json", True, 0.9)
    assert make_backend(other, server, smollm2).min_call_confidence == 0.9


def test_without_the_prompt_cache_llama_cpp_is_told_to_read_each_prompt_afresh() -> None:
    from bench.bfcl.run import question_request

    from parlay.wire.openai_client import encode_request

    [question] = data.sample("multiple", 1, 0)
    cached = question_request(question, 64)
    fresh = question_request(question, 64, prompt_cache=False)
    assert "cache_prompt" not in encode_request(cached, model="m", stream=True)
    assert encode_request(fresh, model="m", stream=True)["cache_prompt"] is False


def test_a_run_adds_its_commit_to_a_page_in_either_shape() -> None:
    from bench.bfcl.run import note_commit

    page = {"commits": {"parlay json constrained": "e253d02 (hand-written)"}}
    note_commit(page, ["parlay json constrained", "parlay fenced free"], "abc1234")
    assert page["commits"] == {
        "parlay json constrained": "e253d02 (hand-written); then abc1234",
        "parlay fenced free": "abc1234",
    }
    note_commit(page, ["parlay fenced free"], "abc1234")  # resumed on the same commit
    assert page["commits"]["parlay fenced free"] == "abc1234"
    older: dict = {"commits": ["1670488"]}
    note_commit(older, ["parlay json constrained"], "abc1234")
    assert older["commits"] == ["1670488", "abc1234"]
    fresh: dict = {}
    note_commit(fresh, ["native"], "abc1234")
    assert fresh["commits"] == ["abc1234"]
