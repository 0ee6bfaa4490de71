"""Strategies on a scripted backend: reject and sample again, repair, best of n, the
flag when the budget runs out, and what the session keeps (the chosen attempt in its
context, every attempt a branch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

import parlay
from parlay import GenerationOptions, ScriptedBackend, Session
from parlay.components import Instruction
from parlay.requirements import (
    Attempt,
    BestOfN,
    JudgedBy,
    NextAttempt,
    RejectionSampling,
    Repair,
    RequirementsNotMetError,
    SampledThunk,
    check,
    judge_prompt,
    req,
)
from parlay.requirements.judge import Judging
from parlay.thunk import ModelOutputThunk

from .helpers import attempts_asked, scripted, short

SEA = "Mention the sea"


def sea_judge(answer: str) -> str:
    return "yes, it does" if "sea" in answer else "no, there is no sea in it"


def test_without_a_strategy_nothing_is_checked_and_the_instruction_renders_as_before(
    snapshot: SnapshotAssertion,
) -> None:
    backend = ScriptedBackend(["anything at all"])
    session = Session(backend)
    reply = session.instruct("Write a line.", requirements=[SEA, "Be brief"], examples=["x"])
    assert reply.value == "anything at all"
    assert type(reply) is ModelOutputThunk and len(backend.requests) == 1
    rendered = backend.requests[0].messages[-1].content
    # the same text the instruction rendered before requirements could be checked
    before = Instruction.instruct(
        "Write a line.", requirements=[SEA, "Be brief"], examples=["x"]
    ).text
    assert rendered == before
    assert rendered == snapshot


def test_rejection_sampling_asks_again_until_the_requirements_hold() -> None:
    backend = scripted(["a mountain", "a forest", "the sea at night"], sea_judge)
    session = Session(backend)
    reply = session.instruct("Write a line.", requirements=[SEA], strategy=RejectionSampling(5))
    assert isinstance(reply, SampledThunk)
    assert reply.value == "the sea at night" and reply.success
    assert [a.passed for a in reply.sampling.attempts] == [False, False, True]
    # each attempt asked from the instruction afresh: the same one message
    asked = attempts_asked(backend)
    assert len(asked) == 3 and len({r.messages for r in asked}) == 1
    first = reply.sampling.attempts[0].validations[0]
    assert first.by is JudgedBy.MODEL and first.reason == "there is no sea in it"
    assert first.usage is not None


def test_repair_tells_the_model_what_failed_and_why(snapshot: SnapshotAssertion) -> None:
    backend = scripted(["a very long mountain line", "sea"], sea_judge)
    session = Session(backend)
    reply = session.instruct(
        "Write a line.",
        requirements=[SEA, req("At most 10 characters", short(10))],
        strategy=Repair(3),
    )
    assert reply.value == "sea" and reply.success
    second = attempts_asked(backend)[1].messages
    # the repair continues the failed attempt's conversation
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[1].content == "a very long mountain line"
    assert second[2].content == snapshot
    assert reply.sampling.attempts[1].repair == second[2].content
    assert reply.sampling.attempts[1].follows is reply.sampling.attempts[0]


def test_the_judge_prompt_shows_the_task_the_answer_and_the_requirement(
    snapshot: SnapshotAssertion,
) -> None:
    judging = Judging(ScriptedBackend([]), task="Write a line about water.")
    assert judge_prompt(req(SEA), "Waves at night.", judging) == snapshot


def test_a_template_folder_overrides_the_judge_and_repair_prompts(tmp_path: Path) -> None:
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "judge.j2").write_text("JUDGE {{ requirement }}")
    (tmp_path / "requirements" / "repair.j2").write_text(
        "FIX {{ failures | map(attribute='requirement') | join(', ') }}"
    )
    seen: list[str] = []

    def reply(request: object) -> str:
        text = request.messages[-1].content  # type: ignore[attr-defined]
        seen.append(text)
        return "no" if text.startswith("JUDGE") else "an answer"

    session = Session(ScriptedBackend(reply))
    strategy = Repair(2, template_dir=tmp_path)
    assert session.instruct("Write.", requirements=[SEA], strategy=strategy).value == "an answer"
    assert seen == ["Write.\n\nRequirements:\n- Mention the sea", "JUDGE Mention the sea",
                    f"FIX {SEA}", "JUDGE Mention the sea"]  # fmt: skip


def test_best_of_n_makes_n_attempts_and_keeps_the_one_meeting_the_most() -> None:
    within = req("At most 12 characters", short(12))
    backend = scripted(["the sea and much more", "sea, short", "a sea too"], sea_judge)
    session = Session(backend)
    reply = session.instruct("Write.", requirements=[SEA, within], strategy=BestOfN(3))
    assert [a.met for a in reply.sampling.attempts] == [1, 2, 2]
    assert reply.value == "sea, short"  # the earliest of the best
    assert len(attempts_asked(backend)) == 3


def test_a_budget_that_runs_out_keeps_the_best_attempt_and_says_so() -> None:
    within = req("At most 5 characters", short(5))
    backend = scripted(["a long line", "the sea, long", "still long"], sea_judge)
    session = Session(backend)
    reply = session.instruct("Write.", requirements=[SEA, within], strategy=RejectionSampling(3))
    assert reply.value == "the sea, long"  # meets one of two, the others none
    assert not reply.success and reply.sampling.budget_exhausted
    assert len(reply.sampling.attempts) == 3
    assert "NOT met" in repr(reply) and "attempt 2 of 3" in repr(reply)
    assert [str(v) for v in reply.validations] == [
        "[pass by model] Mention the sea: it does",
        "[FAIL by code] At most 5 characters",
    ]


def test_strict_raises_when_the_budget_runs_out_with_every_attempt() -> None:
    session = Session(scripted(["a", "b"], sea_judge))
    reply = session.instruct("Write.", requirements=[SEA], strategy=Repair(2, strict=True))
    with pytest.raises(RequirementsNotMetError, match="no attempt of 2") as raised:
        reply.value  # noqa: B018
    assert [a.value for a in raised.value.result.attempts] == ["a", "b"]
    assert len(session.ctx) == 0  # a failed turn leaves the context as it was


def test_a_judge_backend_answers_instead_of_the_sessions() -> None:
    judge = ScriptedBackend(["yes"])
    backend = ScriptedBackend(["an answer"])
    session = Session(backend)
    reply = session.instruct(
        "Write.", requirements=[SEA], strategy=RejectionSampling(2, judge=judge)
    )
    assert reply.success and len(backend.requests) == 1 and len(judge.requests) == 1


def test_a_check_is_checked_but_never_shown_to_the_model() -> None:
    backend = scripted(["I am sorry", "fine"])
    session = Session(backend)
    polite = check("No apology", lambda text: "sorry" not in text.lower())
    reply = session.instruct("Write.", requirements=[polite], strategy=RejectionSampling(2))
    assert reply.value == "fine"
    assert attempts_asked(backend)[0].messages[-1].content == "Write."


def test_the_context_keeps_the_chosen_attempt_and_every_attempt_is_a_branch() -> None:
    session = Session(scripted(["no water", "the sea"], sea_judge), system="sys")
    reply = session.instruct("Write.", requirements=[SEA], strategy=RejectionSampling(3))
    assert [m.content for m in session.ctx.messages()] == [
        "sys", "Write.\n\nRequirements:\n- Mention the sea", "the sea",
    ]  # fmt: skip
    names = [a.branch for a in reply.sampling.attempts]
    assert session.branches.names == ["main", *names]
    assert session.branches[names[0]].ctx.messages()[-1].content == "no water"
    html = parlay.compare(session.branches)._repr_html_()
    assert "no water" in html and html.count("the sea") >= 2  # main's and its attempt's


class FirstThatIsShort:
    """A user's strategy: two methods, no base class."""

    def next_attempt(self, attempts: Sequence[Attempt]) -> NextAttempt | None:
        return None if len(attempts[-1].value) <= 3 or len(attempts) == 4 else NextAttempt()

    def choose(self, attempts: Sequence[Attempt]) -> Attempt:
        return attempts[-1]


def test_a_strategy_of_your_own_is_an_object_with_two_methods() -> None:
    session = Session(scripted(["long", "longer", "ok"]))
    reply = session.instruct("Write.", requirements=[SEA], strategy=FirstThatIsShort())
    assert reply.value == "ok" and len(reply.sampling.attempts) == 3


def test_validate_checks_an_output_without_generating() -> None:
    backend = ScriptedBackend(["no, it is about hills"])
    session = Session(backend)
    found = session.validate([SEA, req("Short", short(40))], output="Hills and valleys.")
    assert [(v.passed, v.by) for v in found] == [(False, JudgedBy.MODEL), (True, JudgedBy.CODE)]
    assert len(session.ctx) == 0 and len(backend.requests) == 1


def test_validate_defaults_to_the_newest_output_of_the_context() -> None:
    session = Session(ScriptedBackend(["waves"]))
    session.chat("Say a word.")
    (found,) = session.validate([req("Has a w", lambda t: "w" in t)])
    assert found.passed


def test_later_attempts_sample_at_the_strategys_temperature_each_with_its_seed() -> None:
    backend = scripted(["a", "b", "c"], lambda answer: "no")
    session = Session(backend, options=GenerationOptions(temperature=0, max_tokens=50))
    strategy = RejectionSampling(3, temperature=0.8)
    assert session.instruct("Write.", requirements=[SEA], strategy=strategy).value == "a"
    asked = [r.options for r in attempts_asked(backend)]
    assert [(o.temperature, o.seed, o.max_tokens) for o in asked] == [
        (0, None, 50), (0.8, 2, 50), (0.8, 3, 50),
    ]  # fmt: skip
