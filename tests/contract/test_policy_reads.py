"""`tool_choice` is read in one place of the engine, `engine/policy.py`: the checks, the
grammar, the contract and the retry messages read the `TurnPolicy` it makes. Outside the
engine, only the modules that make, validate or encode a request read it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "parlay"
# Where a request's choice is made, checked or written for a provider's API: the value
# itself, the wire codecs, the command line and the session's own request building; and
# the gate that keeps a reply's calls to what the choice allows, whatever the backend.
MAKERS = {
    "backends/offered.py",
    "request.py",
    "tool_loop.py",
    "turn_runner.py",
    "cli/app.py",
    "cli/options.py",
    "wire/anthropic_client.py",
    "wire/openai_client.py",
    "wire/validate.py",
}
# The attributes of a `ToolChoice` that say what it asks for.
CHOICE_ATTRIBUTES = {"mode", "forces_call"}


def _is_choice(node: ast.expr) -> bool:
    """Whether `node` names a tool choice: `choice`, `x.tool_choice`, `x.choice`..."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return name.endswith("choice")


def choice_reads(source: str) -> list[int]:
    """The lines of `source` that read a request's `tool_choice` or what a choice asks."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        if node.attr == "tool_choice" or (
            node.attr in CHOICE_ATTRIBUTES and _is_choice(node.value)
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_choice_reads_finds_a_read_and_not_a_keyword() -> None:
    source = (
        "a = request.tool_choice.mode\nb = request.replace(tool_choice=NONE)\nc = choice.mode\n"
    )
    assert choice_reads(source) == [1, 1, 3]


def test_tool_choice_is_read_in_the_turn_policy_only() -> None:
    readers = {
        path.relative_to(SRC).as_posix(): lines
        for path in sorted(SRC.rglob("*.py"))
        if (lines := choice_reads(path.read_text(encoding="utf-8")))
    }
    engine = {path for path in readers if path.startswith("engine/")}
    assert engine == {"engine/policy.py"}, {path: readers[path] for path in engine}
    others = set(readers) - engine - MAKERS
    assert not others, {path: readers[path] for path in others}
