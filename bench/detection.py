"""How far the built-in catalog agrees with what other projects do about the same lines,
and how well it detects real lines from sources no rule was written from.

The corpus (bench/corpus/*.yaml, README there) holds real kernel lines from peers' public
test data and rule files, each with the peer's own verdict on nodemedic's scale. For each
family this prints: lines, lines the peer detects, how many of those nodemedic detects,
lines whose action matches the peer's, and false actions (a reboot or replace where the
peer says benign or notify-only), with how many of those are deliberate (the entry says
why). Per peer it prints how often nodemedic acts at least as strongly as the peer's test
expects. Then the recall on each set of bench/heldout (bench/recall.py), per family, for
the sources the rules were written from and for the held-out ones. Run it on two commits
to compare catalogs; ``--misses`` lists every disagreement and miss, by family.

    python -m bench.detection [--misses]
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from bench.recall import NEURON, SETS, Judge, columns, load_lines, recall, recall_table, wrong
from nodemedic.catalog import Action, Catalog, load_catalog
from nodemedic.detect.classifier import Classifier, Fault
from nodemedic.detect.logformat import message_of
from nodemedic.jobs import hardware

CORPUS = Path(__file__).parent / "corpus"
EXPECTATIONS = ("none", "notify", "reboot", "replace", "act")
"""A peer's verdict; ``act`` is "reboot or replace" where the peer does not say which."""
_STRENGTH: dict[str, int] = {"ignore": 0, "none": 0, "notify": 1, "reboot": 2, "replace": 3}


@dataclass(frozen=True)
class Entry:
    peer: str
    family: str
    line: str
    expect: str
    why: str


def load_corpus(folder: Path = CORPUS) -> list[Entry]:
    """Every entry of every peer file; a malformed entry stops the run with its place."""
    entries = []
    for path in sorted(folder.glob("*.yaml")):
        document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        for number, raw in enumerate(document["entries"], start=1):
            where = f"{path.name} entry {number}"
            if raw.get("expect") not in EXPECTATIONS or not raw.get("line"):
                raise ValueError(f"{where}: needs a line and expect in {EXPECTATIONS}")
            if not raw.get("path"):
                raise ValueError(f"{where}: says where the line and its verdict are (path)")
            entries.append(
                Entry(
                    peer=str(document["peer"]),
                    family=str(raw["family"]),
                    line=str(raw["line"]),
                    expect=str(raw["expect"]),
                    why=str(raw.get("why") or ""),
                )
            )
    return entries


def _faults(classifier: Classifier, text: str) -> list[Fault]:
    """The fault of each line of ``text`` that has one, read as triage reads a log."""
    return [
        fault
        for raw in text.splitlines()
        if (parsed := message_of(raw)) and (fault := classifier.classify(parsed[0])) is not None
    ]


def verdict(classifier: Classifier, text: str) -> Action | str:
    """nodemedic's action on the lines of ``text`` (the strongest one), ``none`` if none."""
    best: str = "none"
    for fault in _faults(classifier, text):
        if _STRENGTH[fault.action] > _STRENGTH[best]:
            best = fault.action
    return best


def held_out_verdict(classifier: Classifier, text: str) -> str:
    """``verdict`` as the pipeline would tell it from ``text`` alone: a rule that acts on a
    count of lines (``threshold``) and meets fewer here is ``waiting``, counted evidence
    that notifies no one yet (triage says the same), where nothing else acts."""
    faults = _faults(classifier, text)
    hits = Counter(fault.fault_id for fault in faults)
    best, waiting = "none", False
    for fault in faults:
        threshold = fault.rule.threshold
        if threshold is not None and hits[fault.fault_id] < threshold.count:
            waiting = True
        elif _STRENGTH[fault.action] > _STRENGTH[best]:
            best = fault.action
    return "waiting" if best == "none" and waiting else best


def held_out_judge(catalog: Catalog, silencing: Silencing) -> Judge:
    """``held_out_verdict`` by ``catalog``, and ``ignore`` where it is ``none`` because a
    rule that leaves the text silent matched it (the classifier drops such a match);
    ``silencing`` is the same catalog's, which names those rules too. Where the catalog
    finds nothing, the job monitor's rules judge (``job_verdict``): nodemedic reads a job's
    own output too, where NCCL, UCX and the Neuron runtime print what they see of the
    hardware, and a set's line may come from either."""
    classifier = Classifier(catalog)

    def judge(text: str) -> str:
        action = held_out_verdict(classifier, text)
        if action != "none":
            return action
        return "ignore" if silencing.rules(text) else job_verdict(text)

    return judge


class Silencing:
    """A catalog's rules with every ``ignore`` made a notification, so that the rule that
    leaves a line silent is its fault and names itself."""

    def __init__(self, catalog: Catalog) -> None:
        self.silent = {rule.id for rule in catalog.rules if rule.action == "ignore"}
        rules = tuple(
            replace(rule, action="notify") if rule.id in self.silent else rule
            for rule in catalog.rules
        )
        self.classifier = Classifier(replace(catalog, rules=rules))

    def rules(self, text: str) -> list[str]:
        """The rules that leave lines of ``text`` silent; their comments say why."""
        return sorted({f.fault_id for f in _faults(self.classifier, text)} & self.silent)


def job_verdict(text: str) -> str:
    """What the job monitor's hardware rules make of a job's lines: the strongest
    rule's action (``notify`` or ``deep-check``), ``none`` if no rule matches."""
    found = hardware.strongest((0.0, line) for line in text.splitlines())
    return "none" if found is None else found.rule.action


def matches(expect: str, action: str) -> bool:
    return action in ("reboot", "replace") if expect == "act" else action == expect


def at_least(expect: str, action: str) -> bool:
    """nodemedic acts at least as strongly as the peer expects (``act``: a reboot)."""
    wanted = _STRENGTH["reboot" if expect == "act" else expect]
    return _STRENGTH[action] >= wanted


@dataclass
class Score:
    lines: int = 0
    peer_detects: int = 0
    detected: int = 0
    matching: int = 0
    false_actions: int = 0
    deliberate: int = 0

    def add(self, entry: Entry, action: str) -> None:
        self.lines += 1
        if entry.expect != "none":
            self.peer_detects += 1
            self.detected += action != "none"
        self.matching += matches(entry.expect, action)
        if entry.expect in ("none", "notify") and action in ("reboot", "replace"):
            self.false_actions += 1
            self.deliberate += bool(entry.why)


def score(entries: Iterable[Entry], catalog: Catalog) -> dict[str, Score]:
    """Per family, and ``all`` over every entry."""
    classifier = Classifier(catalog)
    scores: dict[str, Score] = {}
    for entry in entries:
        action = verdict(classifier, entry.line)
        for key in (entry.family, "all"):
            scores.setdefault(key, Score()).add(entry, action)
    return scores


def table(scores: dict[str, Score]) -> str:
    header = ("family", "lines", "peer detects", "detected", "actions match", "false actions")
    rows = [header]
    for family in [*sorted(k for k in scores if k != "all"), "all"]:
        s = scores[family]
        rows.append(
            (
                family,
                str(s.lines),
                str(s.peer_detects),
                f"{s.detected} ({100 * s.detected // max(s.peer_detects, 1)} %)",
                f"{s.matching} ({100 * s.matching // max(s.lines, 1)} %)",
                f"{s.false_actions} ({s.deliberate} deliberate)",
            )
        )
    return columns(rows)


def peer_table(entries: Iterable[Entry], catalog: Catalog) -> str:
    """Per peer corpus: lines, how many nodemedic detects of those the peer detects, and
    how many it acts on at least as strongly as the peer's test expects."""
    classifier = Classifier(catalog)
    counts: dict[str, list[int]] = {}
    for entry in entries:
        action = verdict(classifier, entry.line)
        row = counts.setdefault(entry.peer, [0, 0, 0, 0])
        row[0] += 1
        row[1] += entry.expect != "none"
        row[2] += entry.expect != "none" and action != "none"
        row[3] += at_least(entry.expect, action)
    rows = [("peer", "lines", "peer detects", "detected", "at least the peer's action")]
    for peer, (lines, detects, detected, strong) in sorted(counts.items()):
        rows.append(
            (
                peer,
                str(lines),
                str(detects),
                f"{detected} ({100 * detected // max(detects, 1)} %)",
                f"{strong} ({100 * strong // max(lines, 1)} %)",
            )
        )
    return columns(rows)


def misses(entries: Sequence[Entry], catalog: Catalog) -> list[str]:
    """The entries whose action differs from the peer's, for people to read."""
    classifier = Classifier(catalog)
    out = []
    for entry in sorted(entries, key=lambda e: e.family):
        action = verdict(classifier, entry.line)
        if not matches(entry.expect, action):
            mark = " (deliberate)" if entry.why else ""
            last = entry.line.splitlines()[-1]
            head = f"{entry.family:9} {entry.peer:32} {entry.expect:>7} {action:>7}"
            out.append(f"{head}{mark}  {last}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list lines whose action differs")
    args = parser.parse_args()
    entries, catalog = load_corpus(), load_catalog()
    print(table(score(entries, catalog)))
    print()
    print(peer_table(entries, catalog))
    if args.misses:
        print("\nfamily    peer                              expect  action")
        print("\n".join(misses(entries, catalog)))
    silencing = Silencing(catalog)
    judge = held_out_judge(catalog, silencing)
    judges: list[tuple[Path, Judge]] = [(path, judge) for path in SETS]
    for path, judge in [*judges, (NEURON, job_verdict)]:
        lines = load_lines(path)
        print(f"\nrecall on bench/heldout/{path.name}, by the split of each line's source")
        print(recall_table(recall(lines, judge)))
        if args.misses:
            print("\nfamily    split     expect  action")
            for line in sorted(lines, key=lambda line: (line.family, line.split)):
                action = judge(line.line)
                if wrong(line, action):
                    last = line.line.splitlines()[-1]
                    why = f"  {silencing.rules(line.line)}" if action == "ignore" else ""
                    print(
                        f"{line.family:9} {line.split:9} {line.expect:>6} {action:>7}  {last}{why}"
                    )


if __name__ == "__main__":
    main()
