"""The kube tier's order (``tests/support/schedule.py``): ``make test`` builds Karpenter and
KWOK beside the kube tier, so the modules that run them must come last, or a worker sits
idle for minutes on a build."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

from tests.support.paths import ROOT
from tests.support.schedule import MARKER

RUNS_A_CONTROLLER: Final = re.compile(
    r"world\.kube\.(karpenter|kwok)\b|bench\.scale\b|karpenter_nodes|kwok=True"
    r'|(WORLDS|SETTINGS)\["karpenter"\]'
)
"""What starts the Karpenter or KWOK controller in a test: the modules that run them, the
scale world (KWOK), a world with Karpenter's nodes, the Karpenter scenario's world."""


def unmarked_controller_modules(root: Path) -> list[str]:
    found = []
    for tier in ("integration", "e2e"):
        for path in sorted((root / "tests" / tier).rglob("test_*.py")):
            text = path.read_text()
            if RUNS_A_CONTROLLER.search(text) and f"pytest.mark.{MARKER}" not in text:
                found.append(path.relative_to(root / "tests").as_posix())
    return found


def test_every_module_that_runs_a_controller_is_scheduled_last() -> None:
    assert unmarked_controller_modules(ROOT) == [], f"mark these pytest.mark.{MARKER}"


def test_a_controller_module_without_the_mark_is_found(tmp_path: Path) -> None:
    tier = tmp_path / "tests" / "e2e"
    tier.mkdir(parents=True)
    (tier / "test_pool.py").write_text('SETTINGS["karpenter"]\n')
    (tier / "test_marked.py").write_text(
        f"from world.kube.kwok import x\npytestmark = pytest.mark.{MARKER}\n"
    )
    (tier / "test_plain.py").write_text("from world.kube.kubelet import x\n")
    assert unmarked_controller_modules(tmp_path) == ["e2e/test_pool.py"]


def test_marked_modules_are_collected_after_the_rest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from tests.support.schedule import controllers_last\n"
        "def pytest_collection_modifyitems(items):\n"
        "    controllers_last(items)\n"
    )
    pytester.makeini(f"[pytest]\nmarkers =\n    {MARKER}: runs a controller\n")
    pytester.makepyfile(
        test_a_pool=f"import pytest\npytestmark = pytest.mark.{MARKER}\n"
        "def test_one(): pass\ndef test_two(): pass\n",
        test_b_plain="def test_three(): pass\n",
        test_c_plain="def test_four(): pass\ndef test_five(): pass\n",
    )
    ran = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    listed = [line for line in ran.outlines if "::" in line]
    # Unmarked, the module with more tests first, as pytest-xdist would have queued them.
    assert listed == [
        "test_c_plain.py::test_four",
        "test_c_plain.py::test_five",
        "test_b_plain.py::test_three",
        "test_a_pool.py::test_one",
        "test_a_pool.py::test_two",
    ]
