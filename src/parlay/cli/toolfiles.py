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


def _import_failure(origin: str, exc: BaseException) -> ToolFileError:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        where = f" (line {exc.lineno})"
    elif frames:
        where = f" (line {frames[-1].lineno})"
    return ToolFileError(
        f"{origin} does not import{where}: {type(exc).__name__}: {exc}; fix the file and try again"
    )


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
        raise _import_failure("--functions code", exc) from exc
    return _module_tools(module, "--functions code")


def collect_tools(paths: Iterable[str | Path], functions: Iterable[str]) -> list[Tool]:
    """Tools from every file and snippet; two tools with one name is an error."""
    tools: list[Tool] = []
    for path in paths:
        tools.extend(load_tool_file(path))
    for code in functions:
        tools.extend(load_functions(code))
    seen: dict[str, Any] = {}
    for item in tools:
        if item.name in seen:
            raise ToolFileError(f"two tools are named {item.name!r}: rename one")
        seen[item.name] = item
    return tools
