"""What the local world reads at run time ships in the installed package, not in the
repository's ``tests/`` or ``scripts/``: a ``pip install '.[local]'`` runs the demo."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from tests.support.paths import EVENTS, ROOT
from world.aws import gpus
from world.kube import karpenter, kubeapi, kwok
from world.scenarios import planned

PACKAGE = Path(kubeapi.__file__).parents[1]
READ_AT_RUN_TIME = {
    "the agents' recorded nvidia-smi report": gpus.RECORDED_REPORT,
    "its source note": gpus.RECORDED_REPORT.with_name("SOURCES.md"),
    "the kube-apiserver build": kubeapi.BUILD_SCRIPT,
    "the Karpenter build": karpenter.BUILD_SCRIPT,
    "its patch of the KWOK provider": karpenter.BUILD_SCRIPT.with_name(
        "karpenter-kwok-aws-provider-id.patch"
    ),
    "the KWOK build": kwok.BUILD_SCRIPT,
    "Karpenter's instance types": karpenter.INSTANCE_TYPES,
    "the planned demo's retirement notice": planned.NOTICE,
}


@pytest.mark.parametrize("path", READ_AT_RUN_TIME.values(), ids=READ_AT_RUN_TIME.keys())
def test_what_the_local_world_reads_is_package_data(path: Path) -> None:
    assert path.is_relative_to(PACKAGE), f"{path} is outside the package world"
    assert path.is_file()
    relative = path.relative_to(PACKAGE).as_posix()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    patterns = setuptools["setuptools"]["package-data"].get("world", [])
    assert any(fnmatch(relative, p) for p in patterns), (
        f"world/{relative} is not in pyproject.toml's package data of "
        f"world ({patterns}): an installed nodemedic would lack it"
    )


def test_the_shipped_nvidia_smi_report_is_a_copy_of_the_recording_in_the_test_corpus() -> None:
    shipped = gpus.RECORDED_REPORT
    recording = EVENTS / "nvidia-smi" / shipped.name
    assert shipped != recording, "the agents read the test corpus, not a copy in the package"
    assert shipped.read_bytes() == recording.read_bytes(), f"copy {recording} to {shipped} again"


def test_the_planned_demo_s_notice_is_a_copy_of_the_documented_payload() -> None:
    shipped = planned.NOTICE
    documented = EVENTS / "aws-notices" / shipped.name
    assert shipped != documented, "the demo reads the test corpus, not a copy in the package"
    assert shipped.read_bytes() == documented.read_bytes(), f"copy {documented} to {shipped} again"
