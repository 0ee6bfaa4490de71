"""The `parlay` command: the typer application every subcommand registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="parlay",
    help="Chat with models, with tool calling that works on every model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Chat with models, with tool calling that works on every model."""


def main() -> None:
    """Entry point of the `parlay` console script."""
    app()


if __name__ == "__main__":
    main()
