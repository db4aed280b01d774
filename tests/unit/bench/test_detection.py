"""The README's agreement table is what ``python -m bench.detection`` prints for the
catalog: a rule change that moves a figure must move the page with it."""

from __future__ import annotations

import re

from bench.detection import load_corpus, score
from nodemedic.catalog import load_catalog
from tests.support.paths import ROOT

ROW = re.compile(
    r"^\| (?:\*\*)?(?P<family>[\w-]+)(?:\*\*)? \| (?P<lines>\d+) \| (?P<detects>\d+) \| "
    r"(?:\*\*)?(?P<detected>\d+)[^|]*\| (?P<matching>\d+) %[^|]*\|",
    re.M,
)


def test_the_readme_s_agreement_table_is_the_bench_s() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("| family |", text.index("**Agreement with the peers.**"))
    rows = {m["family"]: m for m in ROW.finditer(text[start : text.index("\n\n", start)])}
    scores = score(load_corpus(), load_catalog())
    assert set(rows) == set(scores)
    for family, s in scores.items():
        row = rows[family]
        page = (int(row["lines"]), int(row["detects"]), int(row["detected"]))
        assert page == (s.lines, s.peer_detects, s.detected), family
        assert int(row["matching"]) == 100 * s.matching // max(s.lines, 1), family
