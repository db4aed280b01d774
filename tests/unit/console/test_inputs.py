"""What reading an input does to the process it runs in."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from console.cli import main
from console.inputs import YOUNG_OBJECTS, few_collections


def test_the_collector_runs_less_often_while_lines_stream_and_as_before_after() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), few_collections():
        assert gc.get_threshold() == (YOUNG_OBJECTS, *before[1:])
        raise RuntimeError("a file that failed half way")
    assert gc.get_threshold() == before


def test_triage_leaves_the_collector_of_a_process_that_calls_it_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "kern.log"
    log.write_text("[  12.5] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n")
    before = gc.get_threshold()
    assert main(["triage", "--format", "json", str(log)]) == 0
    assert '"nvidia-xid-79"' in capsys.readouterr().out
    assert gc.get_threshold() == before
