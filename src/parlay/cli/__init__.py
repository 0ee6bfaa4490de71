"""The `parlay` command line (typer + rich)."""
