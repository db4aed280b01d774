"""The unit and integration tiers mirror the source: the tests of ``world/kube/kubelet.py``
are under ``tests/unit/world/kube/`` and ``tests/integration/world/kube/``, so a module's
tests are found by its path, and a new module's tests that land elsewhere fail here.

The rule's exceptions: a tier's own root holds the checks of the whole repository (floors,
module sizes, this layout); ``tests/e2e`` is by scenario, not by module (each runs the
demo's world whole); ``tests/support`` and ``tests/events`` hold no tests."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.support.paths import ROOT

TIERS: Final = ("unit", "integration")
WHOLE_REPOSITORY: Final = frozenset(
    {
        "test_layers.py",
        "test_module_size.py",
        "test_layout.py",
        "test_readme.py",
        "test_schedule.py",
    }
)
"""The tests a tier's root may hold."""


def misplaced(root: Path) -> list[str]:
    """The test modules of ``root``'s tiers whose folder is no folder of ``root``'s source,
    by path from ``root/tests``."""
    found = []
    for tier in TIERS:
        for path in sorted((root / "tests" / tier).rglob("test_*.py")):
            where = path.relative_to(root / "tests" / tier)
            if len(where.parts) == 1:
                mirrored = where.name in WHOLE_REPOSITORY
            else:
                source = root.joinpath(*where.parts[:-1])
                mirrored = source.is_dir() and "tests" not in source.relative_to(root).parts
            if not mirrored:
                found.append(path.relative_to(root / "tests").as_posix())
    return found


def test_every_test_module_is_in_the_folder_of_its_source() -> None:
    assert misplaced(ROOT) == [], "tests/<tier>/<folder>/ must mirror a folder of the source"


def test_a_test_module_outside_the_mirror_is_found(tmp_path: Path) -> None:
    (tmp_path / "world" / "kube").mkdir(parents=True)
    for placed in ("world/kube", "world", "k8s", "."):
        folder = tmp_path / "tests" / "unit" / placed
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "test_kubelet.py").write_text("")
    (tmp_path / "tests" / "unit" / "test_layers.py").write_text("")
    assert misplaced(tmp_path) == ["unit/k8s/test_kubelet.py", "unit/test_kubelet.py"]
