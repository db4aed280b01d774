"""A fleet's history is larger than the memory of the machine that replays it: the backtest
streams its files, so what it holds does not grow with the lines it reads."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from console.cli import main
from tests.support.backtest import benign_lines, fault_line, node, tail_line

SMALL, LARGE = 4_000, 32_000
PER_LINE = 64
"""Bytes a replay may hold for each line it read (its read buffers, which stop growing at a
block a file, count here at these sizes): one event kept for each line would be hundreds
(its message, its id, its time)."""
CLOCK = "rtc_cmos 00:00: setting system clock to 2026-11-22T17:58:03 UTC (1795370283)"


def _tail(folder: Path, lines: int) -> None:
    """One log group's tail: eight nodes' chatter, three of them with a fault early on."""
    benign = benign_lines()
    text = [tail_line(i, node(i), fault_line("nvidia-xid-79")) for i in range(3)]
    text += [tail_line(3 + i / 10, node(i % 8), benign[i % len(benign)]) for i in range(lines)]
    (folder / "tail.log").write_text("\n".join(text) + "\n")


def _nodes(folder: Path, lines: int) -> None:
    """Four nodes' own dmesg, timed since boot (placed by the clock line of each)."""
    benign = benign_lines()
    for number in range(4):
        text = [f"[    0.500000] {CLOCK}", f"[    1.000000] {fault_line('nvidia-xid-48')}"]
        text += [f"[{2 + i / 10:12.6f}] {benign[i % len(benign)]}" for i in range(lines // 4)]
        (folder / f"node-{number}.log").write_text("\n".join(text) + "\n")


def _peak(capsys: pytest.CaptureFixture[str], folder: Path) -> int:
    tracemalloc.start()
    try:
        code = main(["backtest", str(folder), "--enforce", "--format", "json"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert '"decisions": 3' in out or '"decisions": 4' in out
    return peak


@pytest.mark.slow
@pytest.mark.parametrize("write", [_tail, _nodes], ids=["log-group-tail", "node-files"])
def test_what_the_backtest_holds_does_not_grow_with_the_lines_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, write: Callable[[Path, int], None]
) -> None:
    folders = []
    for lines in (SMALL, LARGE):
        folders.append(tmp_path / str(lines))
        folders[-1].mkdir()
        write(folders[-1], lines)
    _peak(capsys, folders[0])  # the first run also loads the catalog and compiles its rules
    peaks = [_peak(capsys, folder) for folder in folders]
    grown = (peaks[1] - peaks[0]) / (LARGE - SMALL)
    assert grown < PER_LINE, f"{grown:.0f} bytes held per line read (peaks {peaks})"
