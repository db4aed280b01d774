"""The house's floors, read from the source: which module imports which.

An import is an ``import`` or ``from ... import`` statement anywhere in a module: at its
top, inside a function, under ``if TYPE_CHECKING``. An import inside a function only puts
a cycle off until run time, so it counts. A module named in a string and loaded with
``importlib`` is not an import: ``console/cli/__init__.py``'s command table names
``world.demo`` so that ``nodemedic demo`` loads the local world only when asked, and the
console does not stand on the world.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from scripts.floors import (
    DOMAIN,
    HOUSE,
    Graph,
    below,
    imports,
    level,
    module_graph,
    room_of,
    sources,
)
from tests.support.paths import ROOT


def floor(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def floor_graph(modules: Graph) -> Graph:
    floors = {package for level in HOUSE for package in level}
    graph: Graph = {f: set() for f in floors}
    for module, imported in modules.items():
        graph[floor(module)] |= {floor(m) for m in imported if floor(m) in floors} - {floor(module)}
    return graph


def upward(floors: tuple[tuple[str, ...], ...], arrows: Graph) -> list[str]:
    """Each import of a room on its own floor or above: ``room -> room``. A room without a
    floor is left to ``test_every_room_of_the_domain_has_its_floor``."""
    rooms = {room for floor in floors for room in floor}
    return sorted(
        f"{room} -> {other}"
        for room, others in arrows.items()
        if room in rooms
        for other in others
        if other != room and other not in below(floors, room)
    )


def domain_graph(modules: Graph) -> Graph:
    """The domain's rooms and the rooms each imports."""
    rooms: Graph = {room: set() for floor in DOMAIN for room in floor}
    for module, imported in modules.items():
        room = room_of(module, 2)
        if floor(module) == "nodemedic" and room:
            imports = {room_of(m, 2) for m in imported if floor(m) == "nodemedic"} - {""}
            rooms.setdefault(room, set()).update(imports)
    return rooms


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


def test_each_floor_imports_only_the_floors_below_it() -> None:
    """Packages on one floor stand side by side: the Lambdas do not import the agent."""
    assert upward(HOUSE, floor_graph(module_graph())) == []


def test_each_room_of_the_domain_imports_only_the_rooms_below_it() -> None:
    assert upward(DOMAIN, domain_graph(module_graph())) == []


def test_every_room_of_the_domain_has_its_floor() -> None:
    """A new subpackage of ``nodemedic`` gets its place in ``scripts/floors.py`` first."""
    rooms = {room_of(module, 2) for module in sources() if floor(module) == "nodemedic"}
    assert rooms - {""} <= {room for floor in DOMAIN for room in floor}


def test_a_lambda_handler_imports_no_other_handler() -> None:
    """Each function's entry point stands alone: what two handlers share lives below them."""
    found = sorted(
        f"{module} -> {m}"
        for module, imported in module_graph().items()
        if floor(module) == "lambdas"
        for m in imported
        if m.startswith("lambdas.") and m.endswith(".handler") and m != module
    )
    assert found == []


@pytest.mark.parametrize(
    ("floors", "arrows", "found"),
    [
        (HOUSE, {"lambdas": {"agent"}}, ["lambdas -> agent"]),
        (HOUSE, {"world": {"console", "nodemedic"}}, []),
        (DOMAIN, {"detect": {"remediate", "catalog"}}, ["detect -> remediate"]),
        (DOMAIN, {"catalog": {"origin"}}, ["catalog -> origin"]),
    ],
)
def test_an_import_on_the_same_floor_or_upwards_is_found(
    floors: tuple[tuple[str, ...], ...], arrows: Graph, found: list[str]
) -> None:
    assert upward(floors, arrows) == found


def test_the_floors_name_every_room_once() -> None:
    for floors in (HOUSE, DOMAIN):
        rooms = [room for floor in floors for room in floor]
        assert len(rooms) == len(set(rooms))
        assert all(level(floors, room) >= 0 for room in rooms)


def test_the_console_names_the_demo_and_does_not_import_it() -> None:
    """The one place the console reaches the world is by name, in its command table."""
    console = ROOT / "console" / "cli" / "__init__.py"
    assert '"world.demo"' in console.read_text(encoding="utf-8")
    assert "world" not in floor_graph(module_graph())["console"]


def test_an_import_in_a_function_counts() -> None:
    path = ROOT / "world" / "demo.py"
    assert "world.scenarios.registry" in imports("world.demo", path, sources())


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
