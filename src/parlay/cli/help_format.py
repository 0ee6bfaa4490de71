"""Help pages show a flag as a plain switch: `--json`, not `--json <bool>`.

typer 0.29's rich help prints every option's type, flags included (`<bool>`), which reads
as if the flag took a value. A flag takes none, so it shows no type; everything else is
unchanged. Imported once by `parlay.cli.app`.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_shown_type = TyperOption.display_type_rich


def _flag_shows_no_type(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag and self.metavar is None:
        return None
    return _shown_type(self, ctx)


TyperOption.display_type_rich = _flag_shows_no_type  # type: ignore[method-assign]
