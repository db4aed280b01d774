"""A release reads what the release before it wrote, and the release before reads what this
one writes: the agents' lines (kernel, injected, previous-boot, signed, heartbeat), the log
names and the ledger's keys. The previous release's own code is taken from git, so a change
of a format that only this tree's tests would agree with fails here (docs/releasing.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from nodemedic.contracts.release import VERSION
from tests.support.paths import ROOT

PREVIOUS = ("0.1.0", "d5df8f5")
"""The release before this one and its commit (docs/releasing.md's table)."""
PROBE = Path(__file__).with_name("probe.py")
HEARTBEAT = {"interval": 300, "lines_read": 12, "spool_bytes": 0, "put_failures": 1}


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's ``nodemedic`` package, from git."""
    shallow = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if shallow == "true":
        pytest.skip(f"a shallow clone holds no {PREVIOUS[0]}: `git fetch --unshallow`")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", PREVIOUS[1], "nodemedic"],
        capture_output=True,
        check=True,
    ).stdout
    tree = tmp_path_factory.mktemp(f"nodemedic-{PREVIOUS[0]}")
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def _probe(tree: Path, request: dict[str, Any]) -> Any:
    done = subprocess.run(
        [sys.executable, str(PROBE)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        cwd=tree,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    # The release asked, not the one installed in the environment.
    assert Path(answer.pop("package")).is_relative_to(tree)
    return answer


def test_the_previous_release_reads_what_this_one_writes(previous: Path) -> None:
    written = _probe(ROOT, {"do": "write", "heartbeat": {**HEARTBEAT, "version": VERSION}})
    ours = _probe(ROOT, {"do": "read", "lines": written["lines"]})
    theirs = _probe(previous, {"do": "read", "lines": written["lines"]})
    assert theirs == ours
    # The release travels in the heartbeat, and no release counts it as a counter.
    assert f'"version":"{VERSION}"' in written["lines"]["heartbeat"]
    assert theirs["heartbeat"]["heartbeat"] == HEARTBEAT
    assert theirs["signed"]["signature"] == ["0123abcd", "A" * 22]
    assert theirs["previous_boot"]["injected"] and theirs["previous_boot"]["previous_boot"]


def test_this_release_reads_what_the_previous_one_wrote(previous: Path) -> None:
    written = _probe(previous, {"do": "write", "heartbeat": HEARTBEAT})
    assert _probe(ROOT, {"do": "read", "lines": written["lines"]}) == _probe(
        previous, {"do": "read", "lines": written["lines"]}
    )


def test_both_releases_name_the_same_logs_and_ledger_keys(previous: Path) -> None:
    request = {"do": "write", "heartbeat": HEARTBEAT}
    assert _probe(ROOT, request)["names"] == _probe(previous, request)["names"]
