"""Where parlay's Jinja2 templates come from, and how a user overrides them.

Templates ship inside the wheel (`parlay/templates`); in a source checkout they are read
from the repository's top-level `templates/`. A user folder passed to `environment()`
(or named by `PARLAY_TEMPLATES`) is searched first, so overriding a template is
copying it there and editing the copy.

Every template renders in Jinja2's immutable sandbox: a template can read the values it
is given and call their safe methods, but not reach Python's internals (`__class__`,
`__globals__`...) nor change a value it was given. An attempt is a
`TemplateSecurityError`. Nothing else changes: the same template renders the same text.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.runtime import Context as TemplateContext
from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from parlay.errors import TemplateSecurityError


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


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, raising parlay's error where it refuses."""

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        what = f"{attribute!r} of a {type(obj).__name__!r} object"
        return self.undefined(
            f"a template may not use {what} (templates render in a sandbox)",
            name=attribute,
            obj=obj,
            # Jinja2 only calls it with the message: parlay's own error is what callers catch
            exc=TemplateSecurityError,  # type: ignore[arg-type]
        )

    def call(
        __self,  # Jinja2's names: a keyword argument `self` or `obj` passes through
        __context: TemplateContext,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if not __self.is_safe_callable(__obj):
            raise TemplateSecurityError(
                f"a template may not call {__obj!r} (templates render in a sandbox)"
            )
        return super().call(__context, __obj, *args, **kwargs)


@lru_cache(maxsize=32)
def _environment(search_path: tuple[str, ...]) -> jinja2.Environment:
    env = _Sandbox(
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
    """A sandboxed Jinja2 environment that looks in `user_dir` (or $PARLAY_TEMPLATES) first."""
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
