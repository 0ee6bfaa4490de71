"""No import cycle in src/parlay, counting imports made inside functions.

import-linter (grimp) counts function-level imports too, but its `acyclic_siblings`
contract compares a package's siblings only, and its ignores can hide a cycle; this test
walks every module's AST itself and has no ignores. An import under `if TYPE_CHECKING:`
names a type for the checker and runs nothing: it is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(module: str, is_package: bool, tree: ast.AST) -> list[tuple[str, ...]]:
    """What each import anywhere in `tree` (functions, methods, branches) names, except
    under `if TYPE_CHECKING:`: `import a` names `a`; `from a import b, c` names `a.b` and
    `a.c` where those are modules, else `a` (the first of each tuple)."""
    found: list[tuple[str, ...]] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                kept = package[: len(package) - node.level + 1]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            found.extend((base, f"{base}.{alias.name}") for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Each module of `package` under `root` and the modules of it that it imports."""
    paths = {_module_name(p, root): p for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _imported_names(module, path.name == "__init__.py", tree)
        named = {n[-1] if n[-1] in paths else n[0] for n in names}
        graph[module] = {n for n in named if n in paths and n != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` as the modules around it, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        if start in done:
            continue
        path.append(start)
        on_path.add(start)
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            nxt = todo.pop()
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                stack.append((nxt, sorted(graph[nxt])))
                path.append(nxt)
                on_path.add(nxt)
    return None


def test_src_parlay_has_no_import_cycle_counting_imports_inside_functions() -> None:
    graph = import_graph(SRC, "parlay")
    assert "parlay.context" in graph and "parlay.session" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_an_import_inside_a_function_closes_a_cycle_and_one_under_type_checking_does_not(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.high import High\n"
        "def verb():\n    from . import high\n    return high\n"
    )
    (package / "high.py").write_text("from pkg.low import verb\n")
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.high", "pkg.low", "pkg.high"]
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import High\n"
    )
    assert find_cycle(import_graph(tmp_path, "pkg")) is None
