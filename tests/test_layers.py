"""The package's floors point one way (docs/contract.md, "Imports"): no import cycle between bnnzoo's modules, no
module importing a floor above its own, and imports inside functions held to the listed exceptions."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "bnnzoo"
FLOORS = {"_log": -1, "_record": -1, "azcompat": -1, "tasks": 0, "models": 1, "inference": 2, "theory": 3,
          "diagnostics": 4, "workflows": 5, "plots": 6, "cli": 7, "testing": 8}
"""Each module's floor: a module may import its own floor and those below (diagnostics reads the theory).  The base
modules (logging, records, the ArviZ adapter) sit under everything; ``bnnzoo.testing`` (helpers for users' tests)
sits on top, where nothing in the package imports it."""
MAX_FUNCTION_IMPORTS = 10
"""Imports inside functions (optional or heavy libraries kept off ``import bnnzoo``, listed in docs/contract.md):
a ratchet, lowered as the exceptions go."""


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        parts = p.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODS = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported bnnzoo module, inside a function) for every import of a module."""
    tree, out = ast.parse(path.read_text()), []
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                t = f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODS else mod
                if t in MODS:
                    out.append((t, id(node) in inside))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) in inside) for a in node.names if a.name in MODS]
    return out


EDGES = {m: _imports(m, p) for m, p in MODS.items()}


def _floor(mod: str):
    parts = mod.split(".")
    return FLOORS.get(parts[1]) if len(parts) > 1 else None


def test_no_import_cycle():
    """No cycle among the modules, counting imports inside functions, a package's own children aside."""
    graph = {m: {t for t, _ in e if t != m and not m.startswith(t + ".")} for m, e in EDGES.items()}
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for t in graph.get(m, ()):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_no_upward_import():
    up = [f"{m} -> {t}" for m, e in EDGES.items() for t, _ in e
          if _floor(m) is not None and _floor(t) is not None and _floor(t) > _floor(m)]
    assert not up, up


def test_imports_inside_functions_are_the_listed_exceptions():
    inside = [f"{m} -> {t}" for m, e in EDGES.items() for t, f in e if f]
    assert not inside, f"bnnzoo modules imported inside functions: {inside}"
    n = 0
    for p in MODS.values():
        tree = ast.parse(p.read_text())
        n += sum(isinstance(x, (ast.Import, ast.ImportFrom)) for f in ast.walk(tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for x in ast.walk(f))
    assert n <= MAX_FUNCTION_IMPORTS, f"{n} imports inside functions (at most {MAX_FUNCTION_IMPORTS})"
