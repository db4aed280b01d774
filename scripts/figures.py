"""The figures the docs quote, each from one home, written between markers:

    <!-- figure: NAME -->VALUE<!-- /figure -->

A figure read off the synthesized stack (alarms, resources) is computed from cdk.json's
first cluster at each run; a measured one (transitions, memory) is kept with its date and
source in ``bench/figures.json``. ``make generated`` rewrites every marker;
``tests/integration/scripts/test_figures.py`` fails while a page quotes another value, so
two pages can no longer give one figure two values.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.floors import ROOT

MEASURED = ROOT / "bench" / "figures.json"
MARKER = re.compile(r"(<!-- figure: (?P<name>\w+) -->)(?P<value>.*?)(<!-- /figure -->)")
PAGES = ("README.md", "docs/*.md")


def _insights(alarm: Mapping[str, Any]) -> bool:
    metrics = alarm["Properties"].get("Metrics", [])
    return any("SELECT" in str(metric.get("Expression", "")) for metric in metrics)


def synthesized(template: Mapping[str, Any]) -> dict[str, str]:
    """The figures of one cluster's template."""
    resources = template["Resources"].values()
    alarms = [r for r in resources if r["Type"] == "AWS::CloudWatch::Alarm"]
    insights = sum(1 for alarm in alarms if _insights(alarm))
    return {
        "stack_resources": str(len(resources)),
        "insights_alarms": str(insights),
        "standard_alarms": str(len(alarms) - insights),
    }


def measured(path: Path = MEASURED) -> dict[str, str]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    return {name: entry["value"] for name, entry in entries.items() if not name.startswith("_")}


TABLE = re.compile(r"(<!-- figures: measured -->\n).*?(<!-- /figures -->)", re.S)


def table(path: Path = MEASURED) -> str:
    """The measured figures with their dates and sources, for docs/scale.md."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    rows = ["| figure | value | measured | how |", "|---|---|---|---|"]
    rows += [
        f"| `{name}` | {entry['value']} | {entry['measured']} | {entry['source']} |"
        for name, entry in entries.items()
        if not name.startswith("_")
    ]
    return "\n".join(rows) + "\n"


def written(text: str, figures: Mapping[str, str]) -> str:
    """``text`` with every marker holding its figure (and the measured table where a page
    has its markers); KeyError names an unknown figure."""
    text = TABLE.sub(lambda found: found[1] + table() + found[2], text)

    def value(found: re.Match[str]) -> str:
        name = found["name"]
        if name not in figures:
            raise KeyError(f"no figure {name!r} (bench/figures.json or scripts/figures.py)")
        return f"{found[1]}{figures[name]}{found[4]}"

    return MARKER.sub(value, text)


def pages() -> list[Path]:
    return sorted(path for pattern in PAGES for path in ROOT.glob(pattern))


def figures() -> dict[str, str]:
    from nodemedic.settings.parse import CONTEXT_KEY, parse_clusters
    from stacks.synth import synth_template

    cluster = parse_clusters(
        json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"][CONTEXT_KEY]
    )[0]
    return {**measured(), **synthesized(synth_template(cluster))}


def main() -> int:
    known = figures()
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = written(text, known)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
