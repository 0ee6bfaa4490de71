"""What the pages derived from the development store share: its rows in, a page out."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.bfcl.stats import Share

Outcome = dict[str, Any]


def cell(share: Share) -> str:
    """A share in points with its interval: `62.6 (52.7–69.4)`."""
    return f"{100 * share.value:.1f} ({100 * share.low:.1f}–{100 * share.high:.1f})"


def page_main(
    render: Callable[[Sequence[Outcome]], str],
    description: str,
    store: Path,
    page: Path,
    argv: Sequence[str] | None = None,
) -> None:
    """Read the store (`--store`), render the page, write it (`--page`) and print it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--store", type=Path, default=store)
    parser.add_argument("--page", type=Path, default=page)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.store.read_text().splitlines() if line.strip()]
    text = render(rows)
    args.page.write_text(text + "\n")
    print(text)
