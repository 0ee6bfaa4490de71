"""Which template folders a loaded context may name.

An `Instruction` renders from its `template_dir` when it has one. A context read from a
file (`Context.from_json`, `Session.load`) must not choose that folder: whoever wrote the
file would choose which templates run. So a loaded instruction's folder is refused unless
the caller allowed it (`template_dirs=`) or trusts the file (`trust_template_dirs=True`).

Folders are compared as real paths, resolved when the context is loaded: a relative name
against the current folder, every symlink followed. An allowed folder admits itself only,
not its subfolders, and the loaded instruction keeps the resolved path, so moving to
another folder later, or a symlink changed later, cannot point it elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from attrs import field, frozen

from parlay._text import one_line
from parlay.errors import TemplateFolderNotAllowedError

Folders = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]

# How much of a folder's name an error repeats (a hostile file's may be any length).
_SHOWN = 160


def _resolved(folders: Folders) -> tuple[Path, ...]:
    if isinstance(folders, str | os.PathLike):
        folders = [folders]  # one folder, not the characters of its name
    return tuple(Path(os.fspath(f)).resolve() for f in folders)


def _real(named: str) -> Path | None:
    try:
        return Path(named).resolve()
    except (OSError, ValueError, RuntimeError):  # a NUL in the name, a symlink loop
        return None


@frozen
class TemplateFolders:
    """The template folders a caller lets a loaded context name.

    `allowed`: folders (resolved at construction); `trust_all`: the file is trusted, its
    folders are kept as written (templates still render in the sandbox).
    """

    allowed: tuple[Path, ...] = field(default=(), converter=_resolved)
    trust_all: bool = False

    def admit(self, named: str, where: str) -> str:
        """The folder an instruction loaded from `where` renders from, or a
        `TemplateFolderNotAllowedError` saying how to allow it."""
        if self.trust_all:
            return named
        real = _real(named) if self.allowed else None
        if real is not None and real in self.allowed:
            return str(real)
        raise TemplateFolderNotAllowedError(self._refusal(named, real, where))

    def _refusal(self, named: str, real: Path | None, where: str) -> str:
        shown = one_line(repr(named), _SHOWN)
        resolved = f" (resolved: {one_line(str(real), _SHOWN)})" if real is not None else ""
        allowed = one_line(", ".join(str(f) for f in self.allowed) or "none", 2 * _SHOWN)
        suggested = one_line(repr(str(real) if real is not None else named), _SHOWN)
        return (
            f"{where} names the template folder {shown}{resolved}, which was not allowed: "
            "a loaded context does not choose where templates come from. If you trust that "
            f"folder, pass template_dirs=[{suggested}] to Session.load or Context.from_json; "
            "if you trust the whole file, trust_template_dirs=True. "
            f"Folders allowed now: {allowed}."
        )


NO_FOLDERS = TemplateFolders()
