"""The checkpoint moves only past records that are safe, and only in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.checkpoint import Checkpoint, CheckpointStore, Progress, resume_point


def test_checkpoint_advances_over_the_safe_prefix_only(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoint.json")
    progress = Progress(store, Checkpoint("b", 0))
    for batch_id, seq in ((1, 100), (2, 200), (3, 300)):
        progress.issued(batch_id, Checkpoint("b", seq, seq * 10))
    progress.safe(2)  # acknowledged before batch 1: record 150 is still in flight
    assert store.load() is None and progress.current.seq == 0
    progress.safe(1)
    assert store.load() == Checkpoint("b", 200, 2000)
    progress.safe(3)
    assert store.load() == Checkpoint("b", 300, 3000)


def test_a_new_boot_starts_from_the_beginning(tmp_path: Path) -> None:
    saved = Checkpoint("boot-1", 5000)
    assert resume_point(saved, "boot-1", -1) == saved
    assert resume_point(saved, "boot-2", -1) == Checkpoint("boot-2", -1)
    assert resume_point(None, "boot-2", 0) == Checkpoint("boot-2", 0)


def test_a_damaged_checkpoint_is_an_error_not_a_silent_restart(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable checkpoint"):
        CheckpointStore(path).load()
