"""One home per figure: every page quotes the value its home gives (a synth of cdk.json's
cluster, or bench/figures.json with a date and a source)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import figures


def test_every_page_quotes_each_figure_as_its_home_gives_it() -> None:
    known = figures.figures()
    stale = [
        str(page)
        for page in figures.pages()
        if figures.written(page.read_text(), known) != page.read_text()
    ]
    assert stale == [], "run `make generated`"
    quoted = {
        found["name"]
        for page in figures.pages()
        for found in figures.MARKER.finditer(page.read_text())
    }
    assert {"insights_alarms", "transitions_reboot", "agent_idle_rss_mb"} <= quoted


def test_each_measured_figure_says_when_and_how() -> None:
    entries = json.loads(figures.MEASURED.read_text(encoding="utf-8"))
    for name, entry in entries.items():
        if not name.startswith("_"):
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["measured"]), name
            assert entry["source"].strip(), name


def test_a_page_naming_an_unknown_figure_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="no figure 'typo'"):
        figures.written("<!-- figure: typo -->1<!-- /figure -->", {"alarms": "74"})


def test_the_synth_figures_count_the_templates_alarms_by_kind() -> None:
    template = {
        "Resources": {
            "A": {
                "Type": "AWS::CloudWatch::Alarm",
                "Properties": {"Metrics": [{"Expression": "SELECT MAX(x) FROM y"}]},
            },
            "B": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "Errors"}},
            "C": {"Type": "AWS::SNS::Topic", "Properties": {}},
        }
    }
    assert figures.synthesized(template) == {
        "stack_resources": "3",
        "insights_alarms": "1",
        "standard_alarms": "1",
    }
