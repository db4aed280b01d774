"""The README's first screen answers what a new user asks first: what it is, where it
repairs, why it over the others, and the commands to a real install."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

SCREEN = 60
"""Lines a first screen holds, about a laptop's terminal or a repository page's fold."""


def first_screen() -> str:
    return "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:SCREEN])


def test_the_first_screen_says_where_nodemedic_repairs_as_a_table() -> None:
    screen = first_screen()
    table = screen[screen.index("## Where it repairs") :]
    for substrate in ("Auto Scaling", "Karpenter", "Auto Mode", "HyperPod"):
        assert re.search(rf"^\|[^\n]*{substrate}[^\n]*\|$", table, re.M), substrate


def test_the_first_screen_compares_and_gives_the_install_commands() -> None:
    screen = first_screen()
    assert "## Why nodemedic" in screen
    for command in ("docker buildx build", "cdk deploy", "helm install", "inject", "history"):
        assert command in screen, command
