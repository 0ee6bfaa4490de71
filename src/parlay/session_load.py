"""Reopening a saved session from what `Session.save` wrote beside the context.

The file names a backend, the tools, and the session's class; `reopen` rebuilds what it
can and asks, in one error that says what, for the rest:

- the backend: the caller's, else an embedded model the file names (`model`, resolved
  through `parlay.backends.catalogue` and started as `parlay.start` starts it);
- the tools: the caller's `tools=` exactly (`[]`: none), else each imported by the
  dotted path the file wrote (`tool_paths`), only a plain function or a `parlay.Tool`
  defined at that very path, never one of the standard library's;
- the class: the caller's (`MySession.load(...)`, `session_class=`), else one the file
  names among the subclasses of `Session` already imported. A class is never imported
  from a path in the file: importing a module runs it, and the file may be anyone's.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parlay.backends.base import Backend
from parlay.embedded_backends import embedded_backend, greedy
from parlay.errors import ConfigurationError
from parlay.tools import Tool, Toolbox

if TYPE_CHECKING:
    from parlay.session import Session

ToolLike = Tool | Callable[..., Any]


def dotted(obj: Any) -> str | None:
    """`module:qualname` of a function or class a later process can import, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None  # a script's own or a local definition: nothing to import it by
    return f"{module}:{qualname}"


def meta_of(session: Session) -> dict[str, Any]:
    """What `save` writes beside the context."""
    paths = {}
    for tool in session.tools:
        path = dotted(tool.function)
        if path is not None:
            paths[tool.name] = path
    return {
        "backend": getattr(session.backend, "name", type(session.backend).__name__),
        "model": embedded_name(session.backend),
        "tools": session.tools.names,
        "tool_paths": paths,
        "session_class": dotted(type(session)),
        "branch": session.branch.name,
    }


def embedded_name(backend: Backend) -> str | None:
    """The catalogue's name of the embedded model `backend` runs, if it runs one."""
    from parlay.backends.catalogue import QWEN, QWEN_FILE, SMOLLM2, SMOLLM2_FILE

    # Down the wrappers (the engine's `inner`) to a LocalBackend's file, by its name:
    # locating Qwen's file may join and hash its parts. (Not by class: the session side
    # never imports the llama.cpp backend, which speaks the wire.)
    files = {SMOLLM2_FILE: SMOLLM2.name, QWEN_FILE: QWEN.name}
    inner: Any = backend
    while inner is not None:
        path = getattr(inner, "model_path", None)
        if isinstance(path, Path):
            return files.get(path.name)
        inner = getattr(inner, "inner", None)
    return None


def reopen(
    base: type[Session],
    cls: type[Session],
    meta: dict[str, Any],
    backend: Backend | None,
    tools: Iterable[ToolLike] | Toolbox | None,
    session_class: type[Session] | None,
    kwargs: dict[str, Any],
) -> tuple[type[Session], Backend, list[ToolLike] | Toolbox, dict[str, Any]]:
    """The class, backend, tools and constructor arguments to reopen with; `base` is
    `Session` (passed: this module is imported by it)."""
    missing: list[str] = []
    kind = session_class or (cls if cls is not base else _named_class(base, meta, missing))
    if backend is None:
        backend, kwargs = _saved_backend(meta, kwargs, missing)
    found = _tools(meta, tools, missing)
    if missing:
        raise ConfigurationError(
            "Session.load cannot rebuild everything this file needs:\n- " + "\n- ".join(missing)
        )
    assert backend is not None
    return kind, backend, found, kwargs


def _named_class(base: type[Session], meta: dict[str, Any], missing: list[str]) -> type[Session]:
    wanted = meta.get("session_class")
    if not wanted or wanted == dotted(base):
        return base
    for kind in _subclasses(base):
        if dotted(kind) == wanted:
            return kind
    missing.append(
        f"it was saved from a session of class {wanted}, which is not imported (a class "
        "is never imported from a file): import it and call its .load(path), or pass "
        "session_class= (session_class=Session opens it without)"
    )
    return base


def _subclasses(kind: type[Session]) -> Iterator[type[Session]]:
    sub: type[Session]
    for sub in kind.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _saved_backend(
    meta: dict[str, Any], kwargs: dict[str, Any], missing: list[str]
) -> tuple[Backend | None, dict[str, Any]]:
    model = meta.get("model")
    if model:
        # As start_session runs the embedded model: greedy unless the caller says.
        options = greedy(kwargs.get("options"))
        return embedded_backend(model), {**kwargs, "options": options}
    missing.append(
        f"its backend was {meta.get('backend', 'not named')!r}, which is not an embedded "
        "model: pass one, Session.load(path, backend)"
    )
    return None, kwargs


def _tools(
    meta: dict[str, Any], given: Iterable[ToolLike] | Toolbox | None, missing: list[str]
) -> list[ToolLike] | Toolbox:
    if given is not None:
        return given if isinstance(given, Toolbox) else list(given)  # exactly the caller's
    have: dict[str, ToolLike] = {}
    paths: dict[str, str] = meta.get("tool_paths") or {}
    unfound = []
    for name in meta.get("tools") or ():
        if name in have:
            continue
        imported = _import_tool(name, paths.get(name))
        if imported is None:
            unfound.append(name)
        else:
            have[name] = imported
    if unfound:
        missing.append(
            f"it used the tools {', '.join(unfound)}, which no path saved imports: pass "
            "the session's tools, Session.load(path, tools=[...]) (tools=[]: none)"
        )
    return list(have.values())


def _name(tool: ToolLike) -> str:
    return tool.name if isinstance(tool, Tool) else getattr(tool, "__name__", repr(tool))


def _import_tool(name: str, path: str | None) -> ToolLike | None:
    """The tool at `path` (`module:qualname`), only if it is a plain function or a
    `Tool` defined there, named `name`, outside the standard library."""
    if not path or ":" not in path:
        return None
    module_name, qualname = path.split(":", 1)
    if module_name.split(".")[0] in sys.stdlib_module_names:
        return None  # a file must not hand the model `shutil:rmtree`
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    function = obj.function if isinstance(obj, Tool) else obj
    if not inspect.isfunction(function) or dotted(function) != path:
        return None
    return obj if _name(obj) == name else None
