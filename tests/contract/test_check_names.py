"""Each of parlay's default checks is named in one place of the engine: the module that
makes the check (its evidence, its verdict, its message and its traits), and at most the
default list besides (`engine/checks/defaults.py`). A name written elsewhere (a tuple of
reasons in the judging, a branch of the retry template, a table of descriptions) is a
second place to change when the check changes, the split this test keeps out. Outside
the engine a name is the public word `Diagnostics` carries (a log, a metric reads it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from parlay.engine.checks.check import EngineCheck
from parlay.engine.checks.defaults import DEFAULT_CHECKS

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "parlay"
ENGINE = SRC / "engine"
TEMPLATES = ROOT / "templates"
DEFAULT_LIST = "engine/checks/defaults.py"


def python_names(source: str, names: set[str]) -> set[str]:
    """The names among `names` that `source` writes as a string of their own (a value
    the code compares or builds with, not a word of a docstring's sentence)."""
    return {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    }


def template_names(text: str, names: set[str]) -> set[str]:
    """The names among `names` a template writes as a word (`reason == "refusal"`)."""
    return {name for name in names if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)}


def files_naming(names: set[str]) -> dict[str, set[str]]:
    """Each name and the files of the engine and of templates/ that name it."""
    found: dict[str, set[str]] = {name: set() for name in names}
    for path in sorted(ENGINE.rglob("*.py")):
        for name in python_names(path.read_text(encoding="utf-8"), names):
            found[name].add(path.relative_to(SRC).as_posix())
    for path in sorted(TEMPLATES.rglob("*.j2")):
        for name in template_names(path.read_text(encoding="utf-8"), names):
            found[name].add(path.relative_to(ROOT).as_posix())
    return found


def makers(source: str) -> set[str]:
    """The names of the checks `source` makes: `EngineCheck("name", ...)`."""
    return {
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == EngineCheck.__name__
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def homes() -> dict[str, set[str]]:
    """Each check's name and the modules of the engine that make a check of that name."""
    found: dict[str, set[str]] = {}
    for path in sorted(ENGINE.rglob("*.py")):
        for name in makers(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(path.relative_to(SRC).as_posix())
    return found


def test_the_name_finders_see_a_value_and_a_template_branch_not_a_sentence() -> None:
    source = 'A = "no_call"\n"""A docstring naming no_call in a sentence."""\nB = f"x{1}"\n'
    assert python_names(source, {"no_call", "wrong_tool"}) == {"no_call"}
    template = '{% if reason == "refusal" %}refusals.{% endif %}{{ x.refusal }}'
    assert template_names(template, {"refusal", "no_call"}) == {"refusal"}
    assert makers('A = EngineCheck("no_call", judge)\nB = Other("wrong_tool")\n') == {"no_call"}


def test_each_default_check_is_named_in_its_module_and_the_default_list_only() -> None:
    checks = [check for check in DEFAULT_CHECKS if isinstance(check, EngineCheck)]
    assert len(checks) == len(DEFAULT_CHECKS)  # every default check is an EngineCheck
    made = homes()
    names = {check.name for check in checks}
    assert all(len(made.get(name, ())) == 1 for name in names), made  # one module makes each
    found = files_naming(names)
    misplaced = {
        name: sorted(files - made[name] - {DEFAULT_LIST})
        for name, files in found.items()
        if files - made[name] - {DEFAULT_LIST}
    }
    assert not misplaced, misplaced
    assert all(len(files) <= 2 for files in found.values()), found


def test_each_default_check_names_its_message_a_template_filling_in_the_retry_frame() -> None:
    """A check's retry message is the template it names: one that exists and fills in
    `contract/retry.j2`'s blocks (or that frame itself, whose words fit any reply)."""
    for check in DEFAULT_CHECKS:
        assert isinstance(check, EngineCheck)
        text = (TEMPLATES / check.message).read_text(encoding="utf-8")
        frame = check.message == "contract/retry.j2"
        assert frame or text.startswith('{% extends "contract/retry.j2" %}'), check.name
