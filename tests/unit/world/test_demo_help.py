"""``nodemedic demo --help`` answers at once: configuring the command loads no scenario,
and the names it offers are the registry's."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT
from world.demo import SCENARIO_NAMES
from world.scenarios.registry import SCENARIOS

HEAVY = ("moto", "kubernetes", "aws_cdk", "boto3", "world.scenarios.registry", "world.world")


def test_the_names_offered_are_the_registry_s() -> None:
    assert sorted(SCENARIO_NAMES) == sorted(SCENARIOS)


def test_demo_help_loads_no_scenario_nor_what_they_stand_on() -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from console.cli import parser\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    parser('demo').parse_args(['demo', '--help'])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
