"""Imports in ``placement`` point down: no cycle between modules, no arrow up the layer table of placement/layers.py.

Read from the source with ``ast`` (nothing is imported): module-level and function-level imports both count;
imports under ``if TYPE_CHECKING:`` are exempt (they never run). ``from pkg import name`` depends on ``pkg.name``
when that is a module, else on ``pkg`` itself (its ``__init__``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from placement.layers import EXCEPTIONS, LAYERS

PACKAGE = Path(__file__).resolve().parents[2] / "placement"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = modules()


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def _owner(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> Iterator[str]:
    """The ``placement`` modules ``module`` imports (TYPE_CHECKING-only imports left out)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    skipped = _type_checking_only(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            target = _owner(name) if name.split(".")[0] == "placement" else None
            if target is not None and target != module:
                yield target


GRAPH = {m: sorted(set(imports(m))) for m in MODULES}


def top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"placement/{package} is in no layer of placement/layers.py: add it")


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(GRAPH[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(GRAPH[nxt])))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def back_arrows() -> set[tuple[str, str]]:
    """Imports of a package in the importer's own layer (a sibling) or above it."""
    wrong = set()
    for module, targets in GRAPH.items():
        for target in targets:
            a, b = top(module), top(target)
            if a != b and layer_of(b) >= layer_of(a):
                wrong.add((module, target))
    return wrong


def test_every_top_level_part_is_in_one_layer():
    packages = {top(m) for m in MODULES}
    listed = [p for layer in LAYERS for p in layer]
    assert sorted(listed) == sorted(set(listed)), "a package in two layers"
    assert packages <= set(listed), f"not in placement/layers.py: {sorted(packages - set(listed))}"


def test_no_import_cycles():
    assert cycles() == []


def test_imports_point_down():
    unexplained = sorted(back_arrows() - EXCEPTIONS.keys())
    assert unexplained == [], (
        "imports against placement/layers.py's order (fix them, or list them there with why):\n"
        + "\n".join(f"  {a} -> {b}" for a, b in unexplained)
    )


def test_listed_exceptions_still_happen():
    stale = sorted(EXCEPTIONS.keys() - back_arrows())
    assert stale == [], f"placement/layers.py lists exceptions that no longer occur, remove them: {stale}"


def test_the_checker_sees_an_arrow_up_and_a_circle(monkeypatch):
    """The check itself: a profile module importing the cost model (inside a function) is an arrow up and, with the
    cost model importing the profile, a circle."""
    fake = dict(GRAPH)
    fake["placement.profile.format"] = [*GRAPH["placement.profile.format"], "placement.costmodel.model"]
    monkeypatch.setitem(globals(), "GRAPH", fake)
    assert ("placement.profile.format", "placement.costmodel.model") in back_arrows()
    assert any("placement.profile.format" in c and "placement.costmodel.model" in c for c in cycles())


def test_function_level_imports_count(tmp_path, monkeypatch):
    source = (
        "def later():\n    from placement.cli import main\n\n\nif TYPE_CHECKING:\n    from placement.lab import x\n"
    )
    fake = tmp_path / "fake.py"
    fake.write_text(source)
    monkeypatch.setitem(MODULES, "placement.fake", fake)
    assert list(imports("placement.fake")) == ["placement.cli"]
