"""The judging returns a value (`Judgement`: the verdict and the next attempt's request,
or the attempt released) and changes nothing of the turn: the turn takes the value in
(`TurnState.take`), so what a turn carries is changed in one object's own methods."""

from __future__ import annotations

import ast
from pathlib import Path

JUDGING = Path(__file__).resolve().parents[2] / "src" / "parlay" / "engine" / "judging.py"
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add"}


def _rooted_at_turn(node: ast.expr) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "turn"


def turn_changes(source: str) -> list[int]:
    """The lines of `source` that assign to the turn or call a mutating method on it."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute | ast.Subscript) and _rooted_at_turn(t)
                   for t in targets):  # fmt: skip
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(func := node.func, ast.Attribute):
            lines.extend(
                [node.lineno] if func.attr in MUTATORS and _rooted_at_turn(func.value) else []
            )
    return sorted(lines)


def test_turn_changes_finds_an_assignment_and_an_append_not_a_read() -> None:
    source = (
        "turn.dropped = True\nturn.report.fired.append('x')\nn = len(turn.report.retries)\n"
        "fired.append(turn.next)\nturn.report.notes += ['y']\n"
    )
    assert turn_changes(source) == [1, 2, 5]


def test_the_judging_changes_nothing_of_the_turn() -> None:
    assert turn_changes(JUDGING.read_text(encoding="utf-8")) == []
