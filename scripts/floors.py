"""The house's floors, written once: the repository's packages from the ground up, and the
domain's own rooms from the ground up.

A package (or a room of the domain) may import the floors below its own and nothing on its
floor or above it. ``tests/unit/test_layers.py`` reads every import statement and holds
the order; ``scripts/generate_docs.py`` writes the floor table of docs/contracts.md from
it, so the page cannot say otherwise. Putting a new package in the house is one line here.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOUSE: tuple[tuple[str, ...], ...] = (
    ("nodemedic",),
    ("agent", "lambdas", "stacks"),
    ("app", "console"),
    ("world",),
    ("bench", "scripts"),
)
"""The repository's packages and top-level modules (``app.py``), ground floor first."""
DOMAIN: tuple[tuple[str, ...], ...] = (
    ("contracts",),
    ("catalog", "health", "origin"),
    ("detect", "dumps"),
    ("remediate",),
    ("jobs",),
    ("settings",),
    ("schemas",),
)
"""The rooms of ``nodemedic``, ground floor first: the names every process shares, then
what reads a node (the catalog, health verdicts, proof of origin), what reads its lines
and dumps, what decides and remediates, the job monitor, the cluster settings (which
gather every floor's knobs) and the schemas generated from them."""
MODULES = ("app",)
"""The floors that are one module, not a package."""
Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    """Every module of the floors, by dotted name."""
    files: list[Path] = []
    for name in (package for floor in HOUSE for package in floor):
        files += [ROOT / f"{name}.py"] if name in MODULES else sorted((ROOT / name).rglob("*.py"))
    return {module_name(path): path for path in files}


def imports(name: str, path: Path, known: Container[str]) -> set[str]:
    """The modules ``name`` imports, wherever the statement is (at the top, in a function,
    under ``if TYPE_CHECKING``: an import in a function only puts a cycle off until run
    time); ``from p import m`` names the module ``p.m`` where ``known`` has one."""
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


def level(floors: tuple[tuple[str, ...], ...], room: str) -> int:
    """The floor ``room`` stands on, 0 the ground."""
    return next(number for number, floor in enumerate(floors) if room in floor)


def below(floors: tuple[tuple[str, ...], ...], room: str) -> tuple[str, ...]:
    """What ``room`` may import: every room of the floors under its own."""
    return tuple(r for floor in floors[: level(floors, room)] for r in floor)


def room_of(module: str, depth: int) -> str:
    """The room a dotted module name is in: its first ``depth`` parts' last one."""
    parts = module.split(".")
    return parts[depth - 1] if len(parts) >= depth else ""
