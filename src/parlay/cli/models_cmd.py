"""`parlay models`: what `-m` accepts, and which of it this machine can use now."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer
from attrs import asdict, frozen
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from parlay.backends.catalogue import EMBEDDED_MODELS, SMOLLM2, EmbeddedModel


@frozen
class ModelForm:
    form: str
    example: str
    what: str
    ready: str  # what this machine has for it (a key set, a server URL), or what it needs


def _env(name: str) -> str:
    return f"${name} set" if os.environ.get(name) else f"needs ${name}"


def model_forms() -> list[ModelForm]:
    """Every `-m` form of `parlay.cli.models.resolve_model`, in its order."""
    served = os.environ.get("PARLAY_OPENAI_BASE_URL")
    embedded_ready = f"served at {served}" if served else "built in"
    return [
        ModelForm(
            "embedded",
            "-m embedded",
            "the embedded model (the default; also 'local')",
            embedded_ready,
        ),
        *(
            ModelForm(
                model.name,
                f"-m {model.name}",
                f"{model.label}, embedded, {model.size_mib} MiB"
                + (" (the default)" if model is SMOLLM2 else ""),
                "installed" if model.installed() else "not installed: see below",
            )
            for model in EMBEDDED_MODELS
        ),
        ModelForm(
            "PATH.gguf",
            "-m ./model.gguf",
            "a GGUF file on the embedded llama.cpp runtime",
            "any local file",
        ),
        ModelForm(
            "URL", "-m http://127.0.0.1:8080/v1", "an OpenAI-compatible server", "a running server"
        ),
        ModelForm(
            "NAME@URL",
            "-m qwen@http://127.0.0.1:8080/v1",
            "an OpenAI-compatible server, asking for model NAME",
            "a running server",
        ),
        ModelForm("openai:NAME", "-m openai:gpt-4o-mini", "OpenAI", _env("OPENAI_API_KEY")),
        ModelForm(
            "anthropic:NAME",
            "-m anthropic:claude-sonnet-4-5",
            "Anthropic's Messages API",
            _env("ANTHROPIC_API_KEY"),
        ),
    ]


def models(
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List what -m accepts (--prompted or --action-format put any behind prompted tool calling)."""
    forms = model_forms()
    if json_output:
        for form in forms:
            typer.echo(json.dumps(asdict(form)))
        return
    # The examples are meant to be copied: never cut nor wrapped, whatever the width
    # (on 80 columns a four-column table cut them to "-m http://127.0.0.1:…"); the form
    # joins the description, which wraps.
    table = Table("example", "what", "here")
    table.columns[0].no_wrap = True
    table.columns[0].min_width = max(len(form.example) for form in forms)
    for form in forms:
        what = f"{form.what} [dim]({escape(form.form)})[/]"
        table.add_row(escape(form.example), what, escape(form.ready))
    console = Console(highlight=False)
    console.print(table)
    for model in EMBEDDED_MODELS:
        if not model.installed():
            _print_install(console, model)


def _print_install(console: Console, model: EmbeddedModel) -> None:
    """The commands that install `model`, wrapped as a shell reads them (a line ending in
    a backslash goes on), so they can be copied whole from any width; then why."""
    console.print(f"To install {model.name}, in a clone of parlay:", soft_wrap=True)
    for command in model.commands:
        for line in shell_lines(command, console.width, indent="  "):
            console.print(line, markup=False, soft_wrap=True)
    if model.why:
        console.print(Padding(escape(model.why), (0, 0, 0, 2)))


def shell_lines(command: str, width: int, *, indent: str = "") -> list[str]:
    """`command` as shell lines of at most `width` characters where its words allow,
    each but the last ending in ` \\`, the ones after the first indented once more."""
    lines: list[str] = []
    line = indent
    for word in command.split(" "):
        room = width - 2  # for the " \\" that would end the line
        if line.strip() and len(line) + 1 + len(word) > room:
            lines.append(line + " \\")
            line = indent + "    " + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return [*lines, line]
