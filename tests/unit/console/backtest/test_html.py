"""The backtest's page: a heading above the timeline, a legend, a table of every decision,
one mark per spot in the strongest action's colour, counted, and nothing to load."""

from __future__ import annotations

import re

from console.backtest.html import COLOURS, STRONGEST, page
from console.backtest.replay import replay
from console.backtest.report import ACTIONS, document
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line, history, node

ENFORCING = ClusterSettings(name="bt", node_groups=("gpu",))
XID79, XID13 = fault_line("nvidia-xid-79"), fault_line("nvidia-xid-13")


def replaced_and_notified() -> str:
    """Node 1 replaced at 18:01:10 (the fleet settles a minute) and notified of another
    fault at that very time, the notify decided last."""
    result = replay(
        history([(10, node(1), XID79), (70, node(1), XID13)]), default_classifier(), ENFORCING
    )
    return page(document(result), result.nodes)


def test_every_action_has_a_colour_and_a_rank() -> None:
    assert sorted(COLOURS) == sorted(STRONGEST) == sorted(ACTIONS)


def test_coincident_decisions_are_one_counted_mark_in_the_strongest_colour() -> None:
    marks = re.findall(
        r"<g><title>([^<]*)</title><circle [^>]*fill=\"(#\w+)\"/>(.*?)</g>", replaced_and_notified()
    )
    (title, fill, count) = next(m for m in marks if node(1) in m[0])
    assert fill == COLOURS["replace"]
    assert ">2</text>" in count
    assert "nvidia-xid-79: replace" in title and "nvidia-xid-13: notify" in title


def test_the_heading_comes_first_and_every_decision_is_in_the_table() -> None:
    html = replaced_and_notified()
    assert (
        html.index("<h1>")
        < html.index('class="legend"')
        < html.index("<svg xmlns")
        < html.index("<table>")
    )
    table = html[html.index("<table>") :]
    assert table.count("<tr>") == 3  # the head and two decisions
    assert "nvidia-xid-79" in table and "nvidia-xid-13" in table


def test_the_page_loads_nothing() -> None:
    html = replaced_and_notified()
    assert "<script" not in html
    assert not re.search(r"\b(src|href)=", html)
    assert "url(" not in html
