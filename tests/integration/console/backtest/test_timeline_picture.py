"""The backtest's HTML page, rendered by a real browser: the fleet timeline shows each
node's actions as marks of the action's colour in the node's row, nothing in the row of a
healthy node, and a replacement is never hidden under another mark."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from console.backtest.html import AXIS_FILL, COLOURS, LEFT, ROW, TOP, WIDTH, page
from console.backtest.replay import Replay, replay
from console.backtest.report import document
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line, history, node
from tests.support.browser import RGB, Picture, read_png, screenshot

SETTINGS = ClusterSettings(name="bt", node_groups=("gpu",), breaker_hold=600)
HEADER = 240
"""Room for the heading, the totals and the legend above the timeline, in CSS pixels."""
XID79, XID48, XID13 = (fault_line(f"nvidia-xid-{code}") for code in (79, 48, 13))


def colour(hex_colour: str) -> RGB:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


MARKS = {colour(c) for c in COLOURS.values()}


def shot(result: Replay, tmp_path: Path) -> Picture:
    path = tmp_path / "backtest.html"
    path.write_text(page(document(result), result.nodes))
    height = HEADER + TOP + ROW * len(result.nodes)
    picture = read_png(screenshot(path, tmp_path / "shot.png", width=WIDTH, height=height))
    assert (picture.width, picture.height) == (WIDTH, height)
    return picture


def row_pixels(picture: Picture, index: int) -> list[RGB]:
    """The pixels along the middle of a node's row, right of the names' column; the
    timeline is found by its axis band, the first thing it draws at its left edge."""
    band = colour(AXIS_FILL)
    top = next(y for y in range(picture.height) if picture.pixel(1, y) == band)
    y = top + TOP + ROW * index + ROW // 2
    return [picture.pixel(x, y) for x in range(LEFT, WIDTH)]


def test_each_row_shows_the_nodes_actions_in_their_colours(tmp_path: Path) -> None:
    # 1 replaced, 2 rebooted, 3-6 replaced then held by the hourly limit, 999 healthy.
    lines = [(10, node(1), XID79), (700, node(2), XID48)]
    lines += [(1400 + 660 * i, node(3 + i), XID79) for i in range(4)]
    result = replay(history(lines), default_classifier(), SETTINGS)
    picture = shot(result, tmp_path)
    expected = {
        node(1): "replace",
        node(2): "reboot",
        node(3): "replace",
        node(4): "replace",
        node(5): "held-breaker",
        node(6): "held-breaker",
    }
    for index, name in enumerate(result.nodes):
        seen = set(row_pixels(picture, index)) & MARKS
        if name == node(999):
            assert seen == set(), f"the healthy node's row shows marks {seen}"
        else:
            assert seen == {colour(COLOURS[expected[name]])}, (name, seen)


def test_every_replacement_is_drawn_even_under_a_notify_at_that_time(tmp_path: Path) -> None:
    # Seven nodes each lose a GPU (replace, a minute later once the fleet window settles)
    # and log a notify-only Xid at that minute: the notify is decided last.
    lines = [(10 + 600 * i, node(1 + i), XID79) for i in range(7)]
    lines += [(70 + 600 * i, node(1 + i), XID13) for i in range(7)]
    result = replay(history(lines), default_classifier(), SETTINGS)
    doc = document(result)
    replaced = {row["node"] for row in doc["rows"] if row["action"] == "replace"}
    assert len(replaced) >= 4, "the hourly limit holds some, the rest are replaced"
    picture = shot(result, tmp_path)
    red = colour(COLOURS["replace"])
    for index, name in enumerate(result.nodes):
        drawn = row_pixels(picture, index).count(red)
        if name in replaced:
            assert drawn >= 6, f"{name}'s replacement is hidden ({drawn} pixels of its colour)"
        else:
            assert drawn == 0, name


def test_a_monitor_only_cluster_marks_monitor_only(tmp_path: Path) -> None:
    result = replay(
        history([(10, node(1), XID79)]), default_classifier(), replace(SETTINGS, node_groups=())
    )
    picture = shot(result, tmp_path)
    index = result.nodes.index(node(1))
    assert set(row_pixels(picture, index)) & MARKS == {colour(COLOURS["monitor"])}
