"""The release number has one home, and the CHANGELOG's newest release is it."""

from __future__ import annotations

import re
import tomllib

import pytest

from console.cli import main
from nodemedic.contracts.release import VERSION
from tests.support.paths import ROOT


def test_the_changelogs_newest_release_is_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert released and released[0] == VERSION
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{VERSION}]")


def test_the_package_reads_its_version_from_the_one_home() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "nodemedic.contracts.release.VERSION"


def test_the_chart_is_the_same_release() -> None:
    chart = (ROOT / "deploy" / "chart" / "nodemedic" / "Chart.yaml").read_text(encoding="utf-8")
    assert f"\nversion: {VERSION}\n" in chart and f'\nappVersion: "{VERSION}"\n' in chart


def test_the_cli_says_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"nodemedic {VERSION}"
