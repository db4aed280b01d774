"""The backtest's HTML page, rendered by a real browser: the fleet timeline shows each
node's actions as marks of the action's colour in the node's row, and nothing in the row
of a healthy node."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from console.backtest.html import COLOURS, LEFT, ROW, TOP, WIDTH, page
from console.backtest.replay import replay
from console.backtest.report import document
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line, history, node
from tests.support.browser import RGB, Picture, read_png, screenshot

SETTINGS = ClusterSettings(name="bt", node_groups=("gpu",), breaker_hold=600)


def colour(hex_colour: str) -> RGB:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def row_colours(picture: Picture, index: int) -> set[RGB]:
    """The colours along the middle of a node's row, right of the names' column."""
    y = TOP + ROW * index + ROW // 2
    return {picture.pixel(x, y) for x in range(LEFT, WIDTH)}


def test_each_row_shows_the_nodes_actions_in_their_colours(tmp_path: Path) -> None:
    xid79, xid48 = fault_line("nvidia-xid-79"), fault_line("nvidia-xid-48")
    # 1 replaced, 2 rebooted, 3-6 replaced then held by the hourly limit, 999 healthy.
    lines = [(10, node(1), xid79), (700, node(2), xid48)]
    lines += [(1400 + 660 * i, node(3 + i), xid79) for i in range(4)]
    result = replay(history(lines), default_classifier(), SETTINGS)
    doc = document(result)
    path = tmp_path / "backtest.html"
    path.write_text(page(doc, result.nodes))
    height = TOP + ROW * len(result.nodes) + 200
    picture = read_png(screenshot(path, tmp_path / "shot.png", width=WIDTH, height=height))
    assert (picture.width, picture.height) == (WIDTH, height)

    marks = {colour(c) for c in COLOURS.values()}
    expected = {
        node(1): "replace",
        node(2): "reboot",
        node(3): "replace",
        node(4): "replace",
        node(5): "held-breaker",
        node(6): "held-breaker",
    }
    for index, name in enumerate(result.nodes):
        seen = row_colours(picture, index) & marks
        if name == node(999):
            assert seen == set(), f"the healthy node's row shows marks {seen}"
        else:
            assert seen == {colour(COLOURS[expected[name]])}, (name, seen)


def test_a_monitor_only_cluster_marks_monitor_only(tmp_path: Path) -> None:
    result = replay(
        history([(10, node(1), fault_line("nvidia-xid-79"))]),
        default_classifier(),
        replace(SETTINGS, node_groups=()),
    )
    path = tmp_path / "monitor.html"
    path.write_text(page(document(result), result.nodes))
    picture = read_png(screenshot(path, tmp_path / "shot.png", width=WIDTH, height=300))
    index = result.nodes.index(node(1))
    marks = {colour(c) for c in COLOURS.values()}
    assert row_colours(picture, index) & marks == {colour(COLOURS["monitor"])}
