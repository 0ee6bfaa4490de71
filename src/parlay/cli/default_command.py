"""`parlay "a prompt"` runs `parlay prompt "a prompt"`, as `llm "a prompt"` does.

The root group reads a first argument that is no command as the start of a prompt
command: a bare prompt, or one of `prompt`'s options (`parlay -m NAME "hi"`). A word
close to a command's name (`parlay promt`) stays the usual "No such command ... Did you
mean" error rather than going to the model as a prompt. And, as llm's, `-o` takes a key
and a value (`KeyValueOptions`).
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

from typer.core import TyperCommand, TyperGroup

DEFAULT_COMMAND = "prompt"
# The root's own options; every other option belongs to the prompt.
_ROOT_OPTIONS = {"--help", "--version"}


class PromptByDefault(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and self._starts_a_prompt(args[0]):
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)

    def _starts_a_prompt(self, first: str) -> bool:
        if first in self.commands or first in _ROOT_OPTIONS:
            return False
        if first.startswith("-"):
            return True
        looks_like_a_command = (
            first.isidentifier()
            and get_close_matches(first, list(self.commands), n=1, cutoff=0.8) != []
        )
        return not looks_like_a_command


class KeyValueOptions(TyperCommand):
    """A command whose `-o/--option` takes a key and a value, `-o temperature 0.2`, as
    llm's does (typer declares no repeated option of two values): the pair is joined as
    `KEY=VALUE` before click parses it, which is also accepted as it is."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, joined_pairs(args))


PAIR_FLAGS = ("-o", "--option")


def joined_pairs(args: list[str]) -> list[str]:
    """`args` with each `-o KEY VALUE` as `-o KEY=VALUE` (a KEY with `=` is left as it is)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":  # what follows is the prompt's, not options
            return out + args[i:]
        if arg in PAIR_FLAGS and i + 2 < len(args) and "=" not in args[i + 1]:
            out += [arg, f"{args[i + 1]}={args[i + 2]}"]
            i += 3
            continue
        out.append(arg)
        i += 1
    return out
