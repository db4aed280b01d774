"""The parts of the docs that are read from the code, each between two markers:

    <!-- generated: NAME (python -m scripts.generate_docs) -->
    ...
    <!-- end: NAME -->

``make generated`` rewrites them; ``tests/unit/scripts/test_generate_docs.py`` fails while a
committed page differs, so a page cannot drift from the settings' declarations, the
floors, the Lambda functions or the command table.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from dataclasses import MISSING
from typing import Any

from console.cli import _COMMANDS
from nodemedic.settings import ClusterSettings, declare
from scripts.floors import DOMAIN, HOLDS, HOUSE, ROOT, below, module_graph, room_of

DOCS = ROOT / "docs"
Block = Callable[[], str]


def _default(name: str, default: Any, spec: declare.Spec) -> str:
    if default is MISSING:
        return "(required)"
    if spec.shown:
        return spec.shown
    if spec.mapping is not None or name == "group_overrides":
        return "`{}`"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return "`[]`" if isinstance(default, tuple) else f"`{default}`"


def _values(name: str, spec: declare.Spec) -> str:
    allowed = declare.choices(ClusterSettings).get(name) or spec.one_of
    if allowed:
        return ", ".join(f"`{value}`" for value in allowed)
    if spec.upto:
        return f"{spec.minimum}..`{spec.upto}`"
    if spec.minimum is not None and spec.maximum is not None:
        return f"{spec.minimum}..{spec.maximum}"
    return "" if spec.minimum is None else f"≥ {spec.minimum}"


def settings_table() -> str:
    """docs/deploy.md's settings, one row per declaration, in the order declared."""
    docs = declare.docs(ClusterSettings)
    rows = [
        "| setting | default | values | per group | meaning |",
        "|---|---|---|---|---|",
    ]
    for setting in declare.declared(ClusterSettings):
        spec = declare.spec_of(setting)
        cells = (
            f"`{setting.name}`",
            _default(setting.name, setting.default, spec),
            _values(setting.name, spec),
            "yes" if spec.per_group else "",
            docs[setting.name].replace("|", "\\|"),
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _outside(room: str, depth: int) -> str:
    """The packages from outside the repository the room's modules import."""
    ours = {name for floor in HOUSE for name in floor}
    found = {
        imported.split(".")[0]
        for module, imports in module_graph().items()
        if room_of(module, depth) == room and (depth == 1 or module.startswith("nodemedic."))
        for imported in imports
    }
    names = sorted(n for n in found - ours - {"__future__"} if n not in sys.stdlib_module_names)
    return ", ".join(f"`{n}`" for n in names) or "the standard library only"


def _path(room: str, domain: bool) -> str:
    if domain:
        return (
            f"`nodemedic/{room}.py`"
            if (ROOT / "nodemedic" / f"{room}.py").exists()
            else (f"`nodemedic/{room}/`")
        )
    return f"`{room}.py`" if (ROOT / f"{room}.py").exists() else f"`{room}/`"


def floor_table() -> str:
    """Every room of the house, ground floor first, with what it may import by the order
    (``scripts/floors.py``) and what it imports from outside, read from the source."""
    rows = [
        "| floor | package | what lives there | runs in | may import | imports from outside |",
        "|---|---|---|---|---|---|",
    ]
    for floors, depth, domain in ((DOMAIN, 2, True), (HOUSE[1:], 1, False)):
        for number, floor in enumerate(floors):
            for room in floor:
                under = below(floors, room)
                allowed = ", ".join(_path(r, domain) for r in under)
                if not domain:
                    allowed = ", ".join(filter(None, ("`nodemedic/`", allowed)))
                holds, runs = HOLDS[room]
                label = f"domain {number}" if domain else f"{number + 1}"
                cells = (
                    label,
                    _path(room, domain),
                    holds,
                    runs,
                    allowed or "nothing of the repository",
                    _outside(room, depth),
                )
                rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def lambda_list() -> str:
    """One line per Lambda function: its folder and its handler's first doc line."""
    lines = []
    for handler in sorted((ROOT / "lambdas").glob("*/handler.py")):
        doc = ast.get_docstring(ast.parse(handler.read_text(encoding="utf-8"))) or ""
        summary = doc.split("\n\n")[0].replace("\n", " ").replace("``", "`")
        lines.append(f"- `lambdas/{handler.parent.name}/`: {summary}")
    return "\n".join(lines)


def command_list() -> str:
    """One line per ``nodemedic`` command: what it does and the module that does it."""
    return "\n".join(
        f"- `nodemedic {name}`: {help_text} (`{module.replace('.', '/')}.py`)"
        for name, (module, _configure, _run, help_text) in _COMMANDS.items()
    )


FAMILIES: dict[str, tuple[str, ...]] = {
    "NVIDIA": ("nvidia", "xid", "dcgm", "dcgmi", "gpu", "gpus", "gpureset"),
    "Neuron": ("neuron",),
    "EFA": ("efa", "fi_info"),
}
"""Each accelerator family and the names its files carry."""
FAMILY_FLOORS = ("nodemedic", "agent", "lambdas", "stacks", "console", "world")


def _of_family(path: str, names: tuple[str, ...]) -> bool:
    """Whether a file's path names the family: a whole word of it, so that ``default.py``
    is no EFA file."""
    return any(re.search(rf"(^|[/_.-]){re.escape(n)}([/_.-]|$)", path) for n in names)


def family_table() -> str:
    """Each family's files, floor by floor, from the tracked files' names."""
    tracked = [
        path.relative_to(ROOT).as_posix()
        for floor in FAMILY_FLOORS
        for path in sorted((ROOT / floor).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]
    rows = [
        "| family | " + " | ".join(f"`{floor}/`" for floor in FAMILY_FLOORS) + " |",
        "|---|" + "---|" * len(FAMILY_FLOORS),
    ]
    for family, names in FAMILIES.items():
        cells = [
            ", ".join(
                f"`{path.removeprefix(floor + '/')}`"
                for path in tracked
                if path.startswith(floor + "/") and _of_family(path.removeprefix(floor), names)
            )
            for floor in FAMILY_FLOORS
        ]
        rows.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


BLOCKS: dict[str, dict[str, Block]] = {
    "deploy.md": {"settings": settings_table},
    "contracts.md": {
        "floors": floor_table,
        "lambdas": lambda_list,
        "commands": command_list,
        "families": family_table,
    },
}


def replaced(text: str, name: str, body: str) -> str:
    """``text`` with the block ``name`` holding ``body``; a page without the markers is an
    error, not a page left as it was."""
    start = re.escape(f"<!-- generated: {name} (python -m scripts.generate_docs) -->")
    pattern = re.compile(rf"({start}\n).*?(\n<!-- end: {name} -->)", re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"no generated block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)


def rendered(page: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    for name, block in BLOCKS[page].items():
        text = replaced(text, name, block())
    return text


def main() -> None:
    for page in BLOCKS:
        (DOCS / page).write_text(rendered(page), encoding="utf-8")


if __name__ == "__main__":
    main()
