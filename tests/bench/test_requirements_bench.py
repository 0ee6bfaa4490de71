"""The requirements bench's tasks and its arithmetic, without a model."""

from bench.requirements import at_budget, summary
from bench.requirements_tasks import TASKS, TOOLS, json_with, lacks, words_at_most


def test_there_are_thirty_tasks_of_every_kind_and_each_tool_task_names_a_tool() -> None:
    assert len(TASKS) == 30
    kinds = {t.kind for t in TASKS}
    assert kinds == {"words", "json", "tool"}
    assert all(t.tool in TOOLS for t in TASKS if t.kind == "tool")


def test_the_checks_pass_and_fail_what_they_say() -> None:
    assert words_at_most(3).check("one two three") == (True, "")
    assert not words_at_most(3).check("one two three four")[0]
    assert lacks("hi").check("Hello, Ada") == (True, "")  # a whole word, not 'hi' in 'this'
    assert not lacks("hi").check("Hi Ada")[0]
    assert json_with("name").check('```json\n{"name": "Tom"}\n```') == (True, "")
    assert json_with("name", "age").check('{"name": "Tom"}') == (False, "missing age")


def test_a_budget_reads_the_first_k_attempts_of_a_budget_3_run() -> None:
    row = {
        "model": "m", "system": "parlay", "strategy": "Repair", "task": "t", "kind": "words",
        "attempts": [
            {"passed": False, "requests": 1, "seconds": 1.0},
            {"passed": True, "requests": 2, "seconds": 0.5},
        ],
    }  # fmt: skip
    assert at_budget(row, 1) == (False, 1, 1.0)
    assert at_budget(row, 2) == (True, 3, 1.5)
    assert at_budget(row, 3) == (True, 3, 1.5)  # it stopped at the attempt that held
    lines = summary([row])
    assert "| m | parlay | Repair | 1 | 0 % " in lines[2] and "| 2 | 100 % " in lines[3]
