"""Recall per family on real lines from sources the rules were, and were not, written from.

bench/heldout/lines.yaml (README there) holds kernel lines from public threads and vendor
documents, each with its source, family and split: ``written`` for a source a rule was
written from, ``held-out`` for one no rule was. A rule that learnt its examples instead of
its fault scores well on the first split and badly on the second, so both are printed:
per family and split, the lines that need attention, how many of them nodemedic detects
(at least a notification), and how many healthy lines it would reboot or replace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HELDOUT = Path(__file__).parent / "heldout" / "lines.yaml"
FRESH = HELDOUT.with_name("fresh.yaml")
"""A second set, gathered after the rules of the first were written, from sources neither
the first set, the rules' examples nor the peer corpora came from; each line keeps the head
its tool wrote (README.md beside it)."""
THIRD = HELDOUT.with_name("third.yaml")
"""A third set, gathered after the fresh set's rules, from sources none of the others used."""
FOURTH = HELDOUT.with_name("fourth.yaml")
"""A fourth, gathered and scored after the third set's changes (README.md beside it)."""
FIFTH = HELDOUT.with_name("fifth.yaml")
"""A fifth, gathered and scored after the fourth set's changes (README.md beside it)."""
SIXTH = HELDOUT.with_name("sixth.yaml")
"""A sixth, after the fifth set's changes."""
SEVENTH = HELDOUT.with_name("seventh.yaml")
"""A seventh, after the sixth set's changes."""
EIGHTH = HELDOUT.with_name("eighth.yaml")
"""An eighth, after the seventh set's changes."""
NINTH = HELDOUT.with_name("ninth.yaml")
"""A ninth, gathered while the eighth set's rules were written, scored after them."""
TENTH = HELDOUT.with_name("tenth.yaml")
"""A tenth, gathered while the ninth set's rules were written, scored after them with none
made from it; rules were later written from fourteen of its sources (README.md beside it)."""
ELEVENTH = HELDOUT.with_name("eleventh.yaml")
"""An eleventh, gathered while the tenth set's rules were written, scored after them with
none made from it; rules were later written from sixteen of its sources."""
TWELFTH = HELDOUT.with_name("twelfth.yaml")
"""A twelfth, gathered while the eleventh set's rules were written, scored after them with
none made from it; rules were later written from eight of its sources."""
THIRTEENTH = HELDOUT.with_name("thirteenth.yaml")
"""A thirteenth, gathered while the family catch-alls were written from the earlier sets'
misses, of the hardware accelerator nodes carry, scored after them with none made from it;
rules were later written from four of its sources."""
FOURTEENTH = HELDOUT.with_name("fourteenth.yaml")
"""A fourteenth, gathered 2026-12-03 by helpers who did not read the rules, scored first
against the catalog of that day's start; a head form and two rules were then written from
four of its sources (README.md beside it)."""
FIFTEENTH = HELDOUT.with_name("fifteenth.yaml")
"""A fifteenth, gathered 2026-12-03 by helpers who did not read the rules: kernel lines, and
a job's own output when the fabric fails (family ``fabric``); scored first, then rules were
written from nine of its sources (README.md beside it)."""
SETS = (
    HELDOUT,
    FRESH,
    THIRD,
    FOURTH,
    FIFTH,
    SIXTH,
    SEVENTH,
    EIGHTH,
    NINTH,
    TENTH,
    ELEVENTH,
    TWELFTH,
    THIRTEENTH,
    FOURTEENTH,
    FIFTEENTH,
)
"""The kernel lines' sets, judged by the catalog."""
NEURON = HELDOUT.with_name("neuron.yaml")
"""Neuron runtime lines of jobs' own output, judged by the job monitor's rules
(``nodemedic.jobs.hardware``), whose strongest action is a deep check."""
SPLITS = ("written", "held-out")
EXPECTATIONS = ("none", "notify", "act")
"""``none``: healthy, or the detail of a line judged elsewhere; ``notify``: needs at least a
notification; ``act``: a reboot or replacement is right."""

Judge = Callable[[str], str]
"""nodemedic's action on a (possibly multi-line) text: ``none``, ``ignore`` (a rule matched
and leaves it silent), ``waiting`` (counted towards a rule's threshold), ``notify``,
``reboot``..."""
MISSED = ("none", "ignore")
"""Actions that give a line needing attention none: no rule knows it, or a rule knows it and
leaves it silent by the decision its comment gives (the detail of a line judged on its own,
a container's OOM kill at its own limit). The table tells the two apart, since only the
first is a gap in the catalog."""


@dataclass(frozen=True)
class Line:
    family: str
    split: str
    expect: str
    source: str
    line: str


def load_lines(path: Path = HELDOUT) -> list[Line]:
    """Every entry; a malformed one stops the run with its place."""
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    lines = []
    for number, raw in enumerate(document["entries"], start=1):
        where = f"{path.name} entry {number}"
        if raw.get("split") not in SPLITS or raw.get("expect") not in EXPECTATIONS:
            raise ValueError(f"{where}: needs split in {SPLITS} and expect in {EXPECTATIONS}")
        if not raw.get("source") or not raw.get("line") or not raw.get("family"):
            raise ValueError(f"{where}: needs a family, a line and its source")
        lines.append(Line(**{key: str(raw[key]) for key in Line.__dataclass_fields__}))
    return lines


@dataclass
class Recall:
    needing: int = 0
    detected: int = 0
    healthy: int = 0
    notified: int = 0
    """Healthy lines that get a notification (or, from a job's output, a deep check): noise,
    though no harm to the node. A line a rule counts towards its threshold (``waiting``)
    notifies no one by itself: it counts as detected where attention is needed, and as
    no noise where not."""
    false_actions: int = 0
    silenced: int = 0
    """Lines needing attention that a rule matched and left silent (``ignore``): misses by
    a documented decision, not for want of a rule."""

    @property
    def percent(self) -> int:
        return 100 * self.detected // max(self.needing, 1)


def wrong(line: Line, action: str) -> bool:
    """A line that needs attention and gets none, or a healthy line that would be rebooted
    or replaced."""
    if line.expect == "none":
        return action in ("reboot", "replace")
    return action in MISSED


def recall(lines: Iterable[Line], judge: Judge) -> dict[tuple[str, str], Recall]:
    """Per (family, split), and ("all", split)."""
    scores: dict[tuple[str, str], Recall] = {}
    for line in lines:
        action = judge(line.line)
        for key in ((line.family, line.split), ("all", line.split)):
            score = scores.setdefault(key, Recall())
            if line.expect == "none":
                score.healthy += 1
                score.notified += action not in (*MISSED, "waiting", "reboot", "replace")
                score.false_actions += wrong(line, action)
            else:
                score.needing += 1
                score.detected += not wrong(line, action)
                score.silenced += action == "ignore"
    return scores


def recall_table(scores: dict[tuple[str, str], Recall]) -> str:
    rows: list[tuple[str, ...]] = [
        (
            "family",
            "split",
            "need attention",
            "detected",
            "missed (a rule's silence)",
            "healthy",
            "notified",
            "false actions",
        )
    ]
    families = [*sorted({family for family, _ in scores if family != "all"}), "all"]
    for family in families:
        for split in SPLITS:
            s = scores.get((family, split))
            if s is None:
                continue
            rows.append(
                (
                    family,
                    split,
                    str(s.needing),
                    f"{s.detected} ({s.percent} %)",
                    f"{s.needing - s.detected} ({s.silenced})",
                    str(s.healthy),
                    str(s.notified),
                    str(s.false_actions),
                )
            )
    return columns(rows)


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as left-aligned columns."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
