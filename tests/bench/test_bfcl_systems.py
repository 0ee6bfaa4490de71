"""The systems are configured as parlay ships them and as the baselines are described,
without starting a model."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bfcl.data import Question
from bench.bfcl.models import Model
from bench.bfcl.store import config_key
from bench.bfcl.systems import VARIANTS, Setup, build

from parlay.backends.local import LocalBackend
from parlay.backends.openai import OpenAIBackend
from parlay.context import SystemMessage, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.start import EMBEDDED_MIN_CALL_CONFIDENCE, default_backend
from parlay.wire.openai_client import encode_request

SMOLLM2 = Model(
    "smollm2", "SmolLM2", Path("smol.gguf"), EMBEDDED_MIN_CALL_CONFIDENCE, embedded=True
)
QWEN = Model("qwen", "Qwen", Path("qwen.gguf"))
URL = "http://127.0.0.1:9/v1"
SETTINGS = ("action_format", "min_call_confidence", "max_tokens", "max_retries", "check_values")
FUNCTION = {
    "name": "math.area",
    "description": "Area of a circle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "radius": {"type": "integer", "description": "The radius."},
            "from": {"type": "string", "description": "A unit.", "default": "m"},
        },
        "required": ["radius"],
    },
}
QUESTION = Question(
    "simple_python_1",
    "simple_python",
    (SystemMessage("Be brief."), UserMessage("Area for radius 3?")),
    (FUNCTION,),
    ({"math.area": {"radius": [3]}},),
)


def engine(model: Model, variant: str = "parlay") -> PromptedBackend:
    [system] = build([variant], Setup(model, URL, 4096, 512))
    backend = system.backend  # type: ignore[attr-defined]
    assert isinstance(backend, PromptedBackend)
    return backend


def test_smollm2_runs_the_embedded_stack_of_start_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("PARLAY_LOCAL_MODEL", raising=False)
    shipped, ours = default_backend(), engine(SMOLLM2)
    assert isinstance(shipped, PromptedBackend)
    assert [getattr(ours, s) for s in SETTINGS] == [getattr(shipped, s) for s in SETTINGS]
    assert ours.min_call_confidence == EMBEDDED_MIN_CALL_CONFIDENCE
    assert (
        isinstance(ours.inner.inner, LocalBackend) and ours.inner.inner.model_path == SMOLLM2.path
    )


def test_qwen_runs_what_parlay_serve_builds_in_front_of_an_upstream() -> None:
    ours = engine(QWEN)
    assert (ours.min_call_confidence, ours.max_tokens) == (
        PromptedBackend(ours.inner.inner).min_call_confidence,
        2048,
    )
    assert isinstance(ours.inner.inner, OpenAIBackend) and ours.inner.inner.base_url == URL


def test_a_variant_changes_only_its_settings_and_its_config_key() -> None:
    shipped, ablated = engine(QWEN), engine(QWEN, "parlay:no-check-values")
    assert (shipped.check_values, ablated.check_values) == (True, False)
    assert ablated.min_call_confidence == shipped.min_call_confidence
    [a, b] = build(["parlay", "parlay:no-check-values"], Setup(QWEN, URL, 4096, 512))
    assert config_key(a.config) != config_key(b.config)
    assert VARIANTS["no-check-values"] == {"check_values": False}
    with pytest.raises(ValueError, match="unknown variant"):
        build(["parlay:nonsense"], Setup(QWEN, URL, 4096, 512))


def test_llama_cpp_gets_the_tools_natively_with_parallel_calls_allowed() -> None:
    [native] = build(["llama.cpp"], Setup(QWEN, URL, 4096, 512))
    body = encode_request(native.request(QUESTION), model="m", stream=True)  # type: ignore[attr-defined]
    assert body["tools"][0]["function"]["name"] == "math.area"
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("auto", True)
    assert (body["temperature"], body["max_tokens"]) == (0.0, 512)
    # BFCL's presentation: the language hint at the end of the description.
    assert body["tools"][0]["function"]["description"].endswith("in Python 3 syntax.")


def test_a_variant_from_the_command_line_is_configure_keyword_arguments() -> None:
    from bench.bfcl.dev import variants

    assert variants(['loose={"min_call_confidence": 0.2, "max_retries": 1}']) == {
        "loose": {"min_call_confidence": 0.2, "max_retries": 1}
    }
    [system] = build(
        ["parlay:loose"], Setup(QWEN, URL, 4096, 512), variants(['loose={"max_retries": 1}'])
    )
    assert system.backend.max_retries == 1  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):
        variants(["loose=[1]"])


def test_a_new_engine_tag_reuses_the_baselines_outcomes_but_not_the_engines() -> None:
    names = ["parlay", "llama.cpp"]
    old = build(names, Setup(QWEN, URL, 4096, 512, tag="stop13", baseline_tag="b"))
    new = build(names, Setup(QWEN, URL, 4096, 512, tag="stop14", baseline_tag="b"))
    keys = [(config_key(a.config), config_key(b.config)) for a, b in zip(old, new, strict=True)]
    assert keys[0][0] != keys[0][1]
    assert all(before == after for before, after in keys[1:])
    rebased = build(["llama.cpp"], Setup(QWEN, URL, 4096, 512, tag="stop14", baseline_tag="c"))
    assert config_key(rebased[0].config) != keys[1][0]


def test_the_page_of_one_engine_tag_keeps_every_baseline_outcome() -> None:
    from bench.bfcl.dev import current

    where = {"model": "qwen", "half": "validate", "category": "multiple", "question": "q1"}
    outcomes = [
        {"system": "parlay", "tag": "stop13", **where},
        {"system": "parlay", "tag": "stop14", **where},
        {"system": "parlay:no-missed_tool", "tag": "stop13", **where},
        {"system": "naive", **where},  # recorded before outcomes carried their tag
        {"system": "toolproxy", "tag": "stop13", **where},
    ]
    kept = current(outcomes, "stop14")
    assert sorted(o["system"] for o in kept) == ["naive", "parlay", "toolproxy"]
    assert current(outcomes, "") == outcomes


def _tagged(system: str, tag: str, question: str) -> dict[str, str]:
    where = {"model": "qwen", "half": "validate", "category": "multiple"}
    return {"system": system, "tag": tag, "question": question, **where}


def test_several_tags_keep_the_newest_engine_that_answered_every_question() -> None:
    from bench.bfcl.dev import current

    outcomes = [
        _tagged("parlay:typed", "stop15", "q1"),  # asked again on the later engine, all of it
        _tagged("parlay:typed", "stop15", "q2"),
        _tagged("parlay:typed", "stop14", "q1"),
        _tagged("parlay:typed", "stop14", "q2"),
        _tagged("parlay", "stop14", "q1"),
        _tagged("parlay", "stop12", "q1"),  # a tag not listed: left out
    ]
    kept = {(o["system"], o["question"]): o["tag"] for o in current(outcomes, "stop14,stop15")}
    assert kept == {
        ("parlay:typed", "q1"): "stop15",
        ("parlay:typed", "q2"): "stop15",
        ("parlay", "q1"): "stop14",
    }


def test_a_later_engine_still_running_does_not_split_its_system_into_two_columns() -> None:
    from bench.bfcl.dev import current
    from bench.bfcl.report import Cell, labels

    outcomes = [
        {**_tagged("parlay", "stop14", q), "config": "old", "right": True} for q in ("q1", "q2")
    ]
    outcomes.append({**_tagged("parlay", "stop15", "q1"), "config": "new", "right": False})
    kept = current(outcomes, "stop14,stop15")
    assert {(o["tag"], o["question"]) for o in kept} == {("stop14", "q1"), ("stop14", "q2")}
    cell = Cell(kept, labels(kept))
    assert cell.common("multiple") == {"q1", "q2"}
    outcomes.append({**_tagged("parlay", "stop15", "q2"), "config": "new", "right": False})
    assert {o["tag"] for o in current(outcomes, "stop14,stop15")} == {"stop15"}


def test_without_the_prompt_cache_every_request_says_so_and_the_key_changes() -> None:
    cached = Setup(QWEN, URL, 4096, 512, tag="t")
    uncached = Setup(QWEN, URL, 4096, 512, tag="t", prompt_cache=False)
    question = Question("simple_python_1", "simple_python", (UserMessage("hi"),), (), None)
    for name in ("parlay", "llama.cpp"):
        (before,) = build([name], cached)
        (after,) = build([name], uncached)
        assert "prompt_cache" not in before.config  # earlier outcomes keep their keys
        assert after.config["prompt_cache"] is False
        assert config_key(after.config) != config_key(before.config)
        assert before.request(question).extra_body.get("cache_prompt") is None
        assert after.request(question).extra_body["cache_prompt"] is False
