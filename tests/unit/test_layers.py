"""The house's floors, read from the source: which module imports which.

An import is an ``import`` or ``from ... import`` statement anywhere in a module: at its
top, inside a function, under ``if TYPE_CHECKING``. An import inside a function only puts
a cycle off until run time, so it counts. A module named in a string and loaded with
``importlib`` is not an import: ``console/cli/__init__.py``'s command table names
``world.demo`` so that ``nodemedic demo`` loads the local world only when asked, and the
console does not stand on the world.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("nodemedic", "agent", "lambdas", "stacks", "console", "world", "bench", "scripts")
MODULES = ("app",)
"""The repository's floors: its packages and its top-level modules (``app.py``)."""
Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    """Every module of the floors, by dotted name."""
    files = [ROOT / f"{m}.py" for m in MODULES]
    for package in PACKAGES:
        files += sorted((ROOT / package).rglob("*.py"))
    return {module_name(path): path for path in files}


def imports(name: str, path: Path, known: Container[str]) -> set[str]:
    """The modules ``name`` imports, wherever the statement is; ``from p import m`` names
    the module ``p.m`` where ``known`` has one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
    return found


def module_graph() -> Graph:
    modules = sources()
    return {name: imports(name, path, modules) for name, path in modules.items()}


def floor(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def floor_graph(modules: Graph) -> Graph:
    floors = set(PACKAGES) | set(MODULES)
    graph: Graph = {f: set() for f in floors}
    for module, imported in modules.items():
        graph[floor(module)] |= {floor(m) for m in imported if floor(m) in floors} - {floor(module)}
    return graph


def cycle(graph: Graph) -> list[str] | None:
    """A circle of imports, each module importing the next, or None."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        # graphlib lists each node before the one that depends on it: reversed, it reads
        # in the direction of the imports.
        return list(reversed(exc.args[1]))
    return None


def test_the_local_world_has_no_import_cycle() -> None:
    world = {
        module: {m for m in imported if floor(m) == "world"}
        for module, imported in module_graph().items()
        if floor(module) == "world"
    }
    assert len(world) > 20, "the world's modules were not found"
    found = cycle(world)
    assert found is None, "world/ imports in a circle: " + " -> ".join(found or ())


def test_the_floors_import_in_one_direction() -> None:
    graph = floor_graph(module_graph())
    found = cycle(graph)
    assert found is None, "the floors import in a circle: " + " -> ".join(found or ())


def test_the_domain_imports_nothing_of_the_house() -> None:
    assert floor_graph(module_graph())["nodemedic"] == set()


def test_the_console_names_the_demo_and_does_not_import_it() -> None:
    """The one place the console reaches the world is by name, in its command table."""
    console = ROOT / "console" / "cli" / "__init__.py"
    assert '"world.demo"' in console.read_text(encoding="utf-8")
    assert "world" not in floor_graph(module_graph())["console"]


def test_an_import_in_a_function_counts() -> None:
    path = ROOT / "world" / "demo.py"
    assert "world.scenarios" in imports("world.demo", path, sources())


def test_a_relative_import_names_its_module(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_text("from . import c\nfrom ..d import e\nimport f.g\n")
    assert imports("p.q.b", path, {"p.q.c"}) == {"p.q.c", "p.d", "f.g"}


def test_a_circle_reads_in_the_direction_of_the_imports() -> None:
    assert cycle({"a": set()}) is None
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) in (
        ["a", "b", "c", "a"],
        ["b", "c", "a", "b"],
        ["c", "a", "b", "c"],
    )
