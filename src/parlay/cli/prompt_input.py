"""Where `parlay prompt` gets its prompt: the argument, piped stdin, or both (as llm does)."""

from __future__ import annotations

from typing import TextIO

import typer


def read_prompt(argument: str | None, stdin: TextIO, *, stdin_is_for_answers: bool) -> str:
    """The prompt for `argument` and `stdin`, following simonw/llm: piped stdin comes
    first and the argument follows it after a space (`cat app.py | parlay prompt 'explain'`);
    `-` or no argument reads stdin alone. With `--tools-approve` and an argument, stdin is
    left for the approval answers."""
    if argument == "-":
        return stdin.read()
    if argument is not None and stdin_is_for_answers:
        return argument
    piped = "" if _is_terminal(stdin) else stdin.read()
    if argument is None:
        if not piped:
            raise typer.BadParameter(
                "no prompt: give one (parlay prompt 'TEXT') or pipe it in "
                "(echo TEXT | parlay prompt)",
                param_hint="'TEXT'",
            )
        return piped
    return f"{piped} {argument}" if piped else argument


def _is_terminal(stdin: TextIO) -> bool:
    try:
        return stdin.isatty()
    except ValueError:  # a closed stream: nothing to read
        return True
