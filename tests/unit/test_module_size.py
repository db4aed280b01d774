"""Modules stay small enough to read whole: one concept each, under the line limit. A module
that outgrows it is split along a seam, a concept per module, not cut in half. The tests
are exempt, and so is what is not the repository's own source (the virtual environment,
the npm packages, the CDK's output)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.paths import ROOT

LIMIT = 400
EXEMPT = {"tests", ".venv", "node_modules", "cdk.out", ".git"}


def too_long(root: Path) -> dict[str, int]:
    """Modules over the limit, by path from ``root``, with their line counts."""
    found = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f not in EXEMPT]
        for name in files:
            if name.endswith(".py"):
                path = Path(folder, name)
                lines = len(path.read_bytes().splitlines())
                if lines > LIMIT:
                    found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_module_is_over_the_limit() -> None:
    assert too_long(ROOT) == {}, f"modules over {LIMIT} lines"


def test_a_long_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_long.py").write_text("x = 1\n" * (LIMIT + 1))
    assert too_long(tmp_path) == {"pkg/long.py": LIMIT + 1}
