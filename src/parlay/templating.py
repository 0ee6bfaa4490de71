"""Where parlay's Jinja2 templates come from, and how a user overrides them.

Templates ship inside the wheel (`parlay/templates`); in a source checkout they are read
from the repository's top-level `templates/`. A user folder passed to `environment()`
(or named by `PARLAY_TEMPLATES`) is searched first, so overriding a template is
copying it there and editing the copy.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2


def packaged_templates_dir() -> Path:
    """The folder holding parlay's own templates."""
    inside = Path(__file__).parent / "templates"
    if inside.is_dir():
        return inside
    checkout = Path(__file__).resolve().parents[2] / "templates"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        "parlay's templates are missing: reinstall parlay (they ship inside the wheel)"
    )


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


@lru_cache(maxsize=32)
def _environment(search_path: tuple[str, ...]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    env.filters["tojson"] = _tojson
    return env


def environment(user_dir: str | os.PathLike[str] | None = None) -> jinja2.Environment:
    """A Jinja2 environment that looks in `user_dir` (or $PARLAY_TEMPLATES) first."""
    folders: list[str] = []
    chosen = user_dir if user_dir is not None else os.environ.get("PARLAY_TEMPLATES")
    if chosen:
        path = Path(chosen)
        if not path.is_dir():
            raise FileNotFoundError(f"template folder {str(path)!r} does not exist")
        folders.append(str(path))
    folders.append(str(packaged_templates_dir()))
    return _environment(tuple(folders))


def render(name: str, user_dir: str | os.PathLike[str] | None = None, **variables: Any) -> str:
    """Render template `name` with `variables`, stripped of surrounding blank lines."""
    return environment(user_dir).get_template(name).render(**variables).strip()
