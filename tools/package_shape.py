"""The shape of the course package and the study, measured from the source: what imports what (imports
inside functions included), import circles, module sizes, and the lines notebooks 05 and 06 reach through
their module-level imports. ``python tools/package_shape.py`` prints it; ``tests/test_package_shape.py``
holds the limits.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("helpers", "cpu_study")
T4_NOTEBOOKS = ("05_grpo_training.ipynb", "06_evaluate_before_after.ipynb")


def modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Path]:
    """``{dotted name: path}`` of every module of ``packages`` (a package is its ``__init__``)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool, top_level_only: bool) -> set[str]:
    """Dotted names an AST imports (``from a import b`` gives ``a`` and ``a.b``); module level only, or
    everywhere (inside functions too)."""
    nodes, found = [], set()
    if top_level_only:
        stack = list(tree.body)
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.ExceptHandler)):
                stack.extend(ast.iter_child_nodes(node))
    else:
        nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - (0 if is_package else 1) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _known(names: set[str], known: dict, exclude: str = "") -> set[str]:
    """The modules of ``known`` that ``names`` name, with their parent packages."""
    out = set()
    for dotted in names:
        parts = dotted.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known)
    return out - {exclude}


def import_graph(mods: dict[str, Path], top_level_only: bool = False) -> dict[str, set[str]]:
    """``{module: modules it imports}`` among ``mods``."""
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        graph[name] = _known(_imported(tree, name, path.name == "__init__.py", top_level_only), mods, name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def notebook_imports(path: Path, mods: dict) -> set[str]:
    """The modules of ``mods`` a notebook's code cells import (shell and magic lines skipped)."""
    found = set()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            code = "\n".join(
                line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("!", "%"))
            )
            found |= _known(_imported(ast.parse(code), "", False, True), mods)
    return found


def reach(starts: set[str], graph: dict[str, set[str]]) -> set[str]:
    """Every module reached from ``starts`` along ``graph``."""
    seen, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def shape(root: Path = ROOT) -> dict:
    """The measures: ``helpers_lines``, ``study_lines``, ``largest`` (lines, module) of helpers,
    ``circles``, ``course_to_study`` (imports of cpu_study by helpers modules), ``t4_reach_lines`` and
    ``t4_reach`` (modules notebooks 05 and 06 reach at module level)."""
    mods = modules(root)
    everywhere, top = import_graph(mods), import_graph(mods, top_level_only=True)
    course = {m: p for m, p in mods.items() if m.split(".")[0] == "helpers"}
    starts = set().union(*(notebook_imports(root / "notebooks" / nb, mods) for nb in T4_NOTEBOOKS))
    reached = reach(starts, top)
    return {
        "helpers_lines": sum(lines(p) for p in course.values()),
        "study_lines": sum(lines(p) for m, p in mods.items() if m.split(".")[0] == "cpu_study"),
        "largest": max((lines(p), m) for m, p in course.items()),
        "circles": circles(everywhere),
        "course_to_study": sorted((m, w) for m in course for w in everywhere[m] if w.split(".")[0] == "cpu_study"),
        "t4_reach_lines": sum(lines(mods[m]) for m in reached),
        "t4_reach": sorted(reached),
    }


if __name__ == "__main__":
    measured = shape()
    for key, value in measured.items():
        print(f"{key}: {value}")
