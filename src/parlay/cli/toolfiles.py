"""Tools from a Python file (`-T PATH.py`) or from code on the command line (`--functions`).

Every public function defined in the file (not imported into it) becomes a tool, and so
does every `@tool`-decorated object. Failures name the file and what to fix.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import traceback
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from parlay.errors import ToolDefinitionError
from parlay.tools import Tool


class ToolFileError(ToolDefinitionError):
    """A tool file is missing, does not import, or defines an unusable tool."""


def _module_tools(module: types.ModuleType, origin: str) -> list[Tool]:
    found: list[Tool] = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, Tool):
            found.append(value)
        elif inspect.isfunction(value) and value.__module__ == module.__name__:
            try:
                found.append(Tool.from_function(value))
            except ToolDefinitionError as exc:
                raise ToolFileError(f"{origin}: {exc}") from exc
    return found


def _import_failure(origin: str, exc: BaseException, source: str | None = None) -> ToolFileError:
    """What failed where: the line number, the line itself (from `source` when the code
    has no file), a caret under a syntax error, and the error."""
    lineno: int | None = None
    offset: int | None = None
    if isinstance(exc, SyntaxError):
        lineno, offset = exc.lineno, exc.offset
        what = f"{type(exc).__name__}: {exc.msg}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.lineno]
        lineno = frames[-1].lineno if frames else None
        what = f"{type(exc).__name__}: {exc}"
    text = _line(exc, source, lineno)
    if text is None and not isinstance(exc, SyntaxError) and frames:
        text = frames[-1].line  # a file's line, read back by traceback
    where = f" (line {lineno})" if lineno else ""
    shown = ""
    if text is not None:
        shown = f"\n    {text.rstrip()}"
        if offset is not None and offset >= 1:
            indent = len(text) - len(text.lstrip())
            shown += "\n    " + " " * max(0, offset - 1 - indent) + "^"
    verb = "does not run" if source is not None else "does not import"
    return ToolFileError(f"{origin} {verb}{where}: {what}{shown}")


def _line(exc: BaseException, source: str | None, lineno: int | None) -> str | None:
    if isinstance(exc, SyntaxError) and exc.text:
        return exc.text.strip("\n").lstrip() if source is None else exc.text.strip("\n")
    if source is not None and lineno is not None:
        lines = source.splitlines()
        if 1 <= lineno <= len(lines):
            return lines[lineno - 1]
    return None


def load_tool_file(path: str | Path) -> list[Tool]:
    """The tools a Python file defines."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ToolFileError(f"tool file {str(path)!r} does not exist")
    digest = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]
    module_name = f"parlay_tools_{file.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ToolFileError(f"tool file {str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    # Registered so pydantic can resolve the annotations of the file's functions.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise _import_failure(f"tool file {str(path)!r}", exc) from exc
    return _module_tools(module, f"tool file {str(path)!r}")


def load_functions(code: str) -> list[Tool]:
    """The tools defined by a snippet of Python code (`--functions`)."""
    module_name = "parlay_functions_" + hashlib.sha1(code.encode()).hexdigest()[:12]
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    try:
        exec(compile(code, "<--functions>", "exec"), module.__dict__)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise _import_failure("--functions code", exc, code) from exc
    return _module_tools(module, "--functions code")


def _not_a_file(given: str, known: list[str]) -> ToolFileError:
    """-T takes a file; a bare name (`-T add`, as llm's -T names a tool) gets told how."""
    if Path(given).suffix or "/" in given or not given.isidentifier():
        return ToolFileError(f"tool file {given!r} does not exist")
    known_note = (
        f" The tools given are {', '.join(known)}; the model sees them all (--tool-choice "
        f"NAME makes it call one)."
        if known
        else ""
    )
    return ToolFileError(
        f"-T {given}: there is no file {given!r}. -T takes a Python file whose public "
        f"functions become tools (-T tools.py); a function can also be written on the "
        f"command line: --functions 'def {given}(a: int, b: int) -> int: return a + b'."
        + known_note
    )


def collect_tools(paths: Iterable[str | Path], functions: Iterable[str]) -> list[Tool]:
    """Tools from every file and snippet; two tools with one name is an error."""
    tools: list[Tool] = []
    missing: list[str] = []
    for path in paths:
        if Path(path).expanduser().is_file():
            tools.extend(load_tool_file(path))
        else:
            missing.append(str(path))
    for code in functions:
        tools.extend(load_functions(code))
    if missing:
        raise _not_a_file(missing[0], [t.name for t in tools])
    seen: dict[str, Any] = {}
    for item in tools:
        if item.name in seen:
            raise ToolFileError(f"two tools are named {item.name!r}: rename one")
        seen[item.name] = item
    return tools
