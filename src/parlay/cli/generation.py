"""What each reply is asked for, from the command line: `--temperature`, `--max-tokens`,
and llm's `-o/--option KEY VALUE` for every generation option by its name, each value
read as its kind and checked for its range once, here, before any model is loaded."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
from attrs import frozen

from parlay.errors import ConfigurationError
from parlay.request import GenerationOptions


@frozen
class Reader:
    """How an option's value is read (`read` raises ValueError) and what it must be."""

    read: Callable[[str], Any]
    must_be: str


def _between(low: float, high: float) -> Reader:
    def read(text: str) -> float:
        value = float(text)
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(text)
        return value

    return Reader(read, f"a number from {low:g} to {high:g}")


def _at_least(low: int) -> Reader:
    def read(text: str) -> int:
        value = int(text)
        if value < low:
            raise ValueError(text)
        return value

    return Reader(read, f"a whole number of {low} or more")


# Each option llm users reach for. `stop` repeats: each -o stop adds a sequence.
READERS = {
    "temperature": _between(0, 2),
    "top_p": _between(0, 1),
    "max_tokens": _at_least(1),
    "seed": Reader(int, "a whole number"),
    "stop": Reader(str, "text"),
    "presence_penalty": _between(-2, 2),
    "frequency_penalty": _between(-2, 2),
}

# `-o KEY VALUE` arrives as `KEY=VALUE` (`parlay.cli.default_command.KeyValueOptions`).
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help=f"A generation option, as llm's -o KEY VALUE: {', '.join(READERS)} (stop repeats).",
    ),
]


def generation_options(
    pairs: Sequence[str], *, max_tokens: int | None, temperature: float | None
) -> GenerationOptions:
    """The options `-o` pairs and the `--max-tokens` / `--temperature` flags ask for (a
    `ConfigurationError` naming the option, for an unknown key, a value out of range, or
    one option given twice)."""
    values: dict[str, Any] = {"stop": ()}
    flags = {"max_tokens": max_tokens, "temperature": temperature}
    given = [tuple(pair.partition("=")[::2]) for pair in pairs]
    for key, text in [*given, *((k, str(v)) for k, v in flags.items() if v is not None)]:
        reader = READERS.get(key)
        if reader is None:
            known = ", ".join(READERS)
            raise ConfigurationError(f"-o {key}: no such option; the options are {known}")
        try:
            value = reader.read(text)
        except ValueError:
            raise ConfigurationError(f"{key} {text!r}: must be {reader.must_be}") from None
        if key == "stop":
            values["stop"] += (value,)
        elif key in values:
            raise ConfigurationError(
                f"{key} is given twice (by -o and by its own flag, or twice by -o)"
            )
        else:
            values[key] = value
    return GenerationOptions(**values)
