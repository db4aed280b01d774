"""``nodemedic triage``: what would nodemedic do to the node these logs and dumps came from?

Offline and local: reads ``dmesg``, ``journalctl -k`` (short forms or ``-o json``), syslog
files, raw ``/dev/kmsg`` records or agent health results, gzipped or not, classifies each
message with the same catalog and classifier the Lambda uses, and prints the faults and a
verdict for each input. A raw record whose facility is not the kernel's is an injected
line, as the agent would mark it: the verdict holds it to what a cluster with the default
``accept_injected_faults`` (off) does, notify.

It reads the dumps an engineer takes on a node too (``nvidia-smi -q -x`` and ``-q``,
``dcgmi diag``, ``neuron-ls``, ``fi_info -p efa``: ``nodemedic.dumps``), recognised by their
content: each becomes the health results the agent would ship, judged by the same rules.
A file in none of these formats is refused (exit 2), never given a clean verdict; an empty
one (a quiet node's ``journalctl -k``) is a healthy node's log. With several files, each is
judged on its own, and one that cannot be read is told on stderr while the others are
judged (exit 2 at the end).

For scripts: ``--format json`` ends each input with a verdict object, and ``--exit-code``
says the strongest action in the exit status (``EXIT_CODES``), as ``git diff --exit-code``
says whether there were changes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TextIO

from console.inputs import InputError, read_text
from nodemedic.catalog import Catalog, CatalogError, Source, load_catalog
from nodemedic.contracts.logs import KERNEL_FACILITY, shipped_message
from nodemedic.detect.classifier import Classifier, Fault
from nodemedic.detect.logformat import LogLine, messages
from nodemedic.dumps import FORMATS, DumpFormat, dump_format
from nodemedic.health.instance_types import Devices, devices_of
from nodemedic.remediate.decision import INJECTED_ACTION

ACTIONS = ("none", "notify", "reboot", "replace")
"""A verdict's action, from the weakest to the strongest."""
EXIT_CODES = {"none": 0, "notify": 1, "reboot": 3, "replace": 4}
"""``--exit-code``: the strongest action of all inputs; 2 stays bad input, with or without
the flag, and wins over any action (an input was not judged)."""
BAD_INPUT = 2
KERNEL_LOG = "kernel-log"
"""The ``format`` of dmesg, journalctl -k, /dev/kmsg records and agent health results."""
_BARE_MESSAGE = re.compile(r"^[A-Za-z][\w.\-]*(?: [\w.:\-\[\]]+){0,2}: \S")
"""A kernel message without a prefix starts with its driver or subsystem: ``NVRM: ``,
``nvidia-nvlink: ``, ``pci 0000:00:1f.0: ``."""


@dataclass(frozen=True)
class Finding:
    path: str
    line_no: int
    line: str
    fault: Fault
    format: str = KERNEL_LOG
    repeats: int = 1
    """How many lines the line stands for (syslog's ``message repeated N times``)."""

    def to_json(self) -> dict[str, object]:
        """The stable ``--format json`` record; other tools parse it, so keys only grow.
        ``action`` is the rule's; ``injected`` says the line was not the kernel's (a raw
        record of another facility), which caps it at notify unless the cluster accepts
        injected faults. For a dump, ``line`` is the health result the agent would ship and
        ``line_no`` the dump's first line naming its device (0: the whole node). ``kind``
        tells it from the verdict object that ends each input, ``file`` is the path as
        given (``-``: stdin)."""
        return {
            "line_no": self.line_no,
            "line": self.line,
            "fault_id": self.fault.fault_id,
            "component": self.fault.component,
            "action": self.fault.action,
            "injected": self.fault.injected,
            "format": self.format,
            "kind": "fault",
            "file": self.path,
            "repeats": self.repeats,
        }


class Verdict(NamedTuple):
    action: str
    """One of ``ACTIONS``."""
    notes: list[str]
    """Each rule's part, for people."""
    waiting: list[str]
    """The faults whose rules wait for more evidence (a threshold not met)."""


@dataclass(frozen=True)
class Judged:
    """One input, read and judged."""

    path: str
    format: str
    lines: int
    findings: list[Finding]

    @property
    def verdict(self) -> Verdict:
        return verdict(self.findings)

    def to_json(self) -> dict[str, object]:
        """The verdict object that ends an input's ``--format json`` records: one key,
        ``verdict``, so that nothing a fault line has (``fault_id``, ``action``, ...) is met
        at its top level and a reader of fault lines passes it over. ``action`` is one of
        ``ACTIONS``; ``counts`` the fault lines by their rule's action."""
        judged = self.verdict
        counts = Counter(f.fault.action for f in self.findings)
        return {
            "verdict": {
                "file": self.path,
                "format": self.format,
                "action": judged.action,
                "lines": self.lines,
                "faults": len(self.findings),
                "counts": {action: counts[action] for action in ACTIONS[1:]},
                "waiting": judged.waiting,
            }
        }


def _looks_like_health(message: str) -> bool:
    return message.startswith("{") and '"check"' in message


def _as_shipped(entry: LogLine) -> str:
    """The message as the agent ships it: marked injected where the line's own priority
    says another facility than the kernel's logged it (the formats without a priority,
    dmesg and the journal's ``kernel:`` lines, are taken for the kernel's)."""
    if entry.facility is None or entry.facility == KERNEL_FACILITY:
        return entry.message
    return shipped_message(entry.message, entry.facility)


def find_faults(path: str, lines: Iterable[str], classifier: Classifier) -> list[Finding]:
    """The faults of one file in line order. Kernel lines and health results are each
    classified in bulk, as the Lambda does, so a large log is read at storm speed."""
    by_source: dict[Source, list[LogLine]] = {"kmsg": [], "health": []}
    for entry in messages(lines):
        by_source["health" if _looks_like_health(entry.message) else "kmsg"].append(entry)
    findings = [
        Finding(
            path=path,
            line_no=entries[index].line_no,
            line=entries[index].raw,
            fault=fault,
            repeats=entries[index].repeats,
        )
        for source, entries in by_source.items()
        for index, fault in classifier.classify_lines(map(_as_shipped, entries), source)
    ]
    return sorted(findings, key=lambda finding: finding.line_no)


def _is_kernel_log(entries: list[LogLine], found: bool) -> bool:
    """Whether the lines are a kernel log: none carries a message (empty, or a quiet
    journal's ``-- No entries --``), some carry a kernel log's prefix or are health results,
    a rule recognised one, or most read like bare kernel messages. Indentation is no
    prefix: an indented text is not taken for a log for that."""
    if not entries or found:
        return True
    if any(e.raw.strip() != e.message or _looks_like_health(e.message) for e in entries):
        return True
    bare = sum(1 for e in entries if _BARE_MESSAGE.match(e.message))
    return bare > 0 and bare * 2 >= len([e for e in entries if not e.message.startswith("#")])


def _line_of(lines: list[str], device: str) -> int:
    """Where the dump first names ``device``; 0 for the node or a device it does not name."""
    if device == "node":
        return 0
    return next((n for n, line in enumerate(lines, start=1) if device in line), 0)


def dump_faults(
    path: str, text: str, dump: DumpFormat, classifier: Classifier, expected: Devices | None
) -> list[Finding]:
    """The faults the catalog's health rules find in the results the dump amounts to."""
    try:
        results = dump.evaluate(text, expected, "")
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    lines, shipped = text.splitlines(), [result.to_json() for result in results]
    return [
        Finding(
            path=path,
            line_no=0
            if results[index].device == "node"
            else _line_of(lines, results[index].device),
            line=shipped[index],
            fault=fault,
            format=dump.name,
        )
        for index, fault in classifier.classify_lines(shipped, "health")
    ]


def judge(path: str, classifier: Classifier, expected: Devices | None) -> Judged:
    """One input's format, length and faults; raises InputError for a file in none."""
    text = read_text(path)
    lines = text.splitlines()
    dump = dump_format(text)
    if dump is not None:
        return Judged(
            path, dump.name, len(lines), dump_faults(path, text, dump, classifier, expected)
        )
    findings = find_faults(path, lines, classifier)
    if not _is_kernel_log(list(messages(lines)), bool(findings)):
        known = ", ".join([KERNEL_LOG] + [f.name for f in FORMATS])
        raise InputError(f"{path}: not in a format triage reads ({known})")
    return Judged(path, KERNEL_LOG, len(lines), findings)


def verdict(findings: list[Finding]) -> Verdict:
    """The strongest action any rule asks for, and the explanation of each rule's part.

    Thresholds are counted over the whole input, as triage has no reliable clock (a line
    syslog folded counts as the lines it stands for); injected lines count apart from
    kernel lines and ask for notify at most, as in a cluster that does not accept injected
    faults.
    """
    hits: Counter[tuple[str, bool]] = Counter()
    first: dict[tuple[str, bool], Finding] = {}
    for finding in findings:
        key = (finding.fault.fault_id, finding.fault.injected)
        hits[key] += finding.repeats
        first.setdefault(key, finding)
    action, notes, waiting = "none", [], []
    for (fault_id, injected), finding in first.items():
        rule = finding.fault.rule
        needed = rule.threshold.count if rule.threshold else 1
        seen = hits[fault_id, injected]
        if seen < needed:
            waiting.append(fault_id)
            notes.append(
                f"{fault_id}: seen {seen}x, acts at {needed} within "
                f"{rule.threshold.window if rule.threshold else 0}s: no action yet"
            )
            continue
        asked = wanted = finding.fault.action
        if injected and wanted != INJECTED_ACTION:
            wanted = INJECTED_ACTION
            notes.append(
                f"{fault_id}: {asked} asked by a line the kernel did not log (injected): "
                f"{wanted} unless the cluster sets accept_injected_faults"
            )
        else:
            notes.append(f"{fault_id} ({rule.summary or rule.component}): {wanted}")
        action = max(action, wanted, key=ACTIONS.index)
    return Verdict(action, notes, waiting)


_SAYING = {
    "none": "leave this node alone",
    "waiting": "no action yet: the rules below act on more evidence",
    "notify": "notify, leave the node in service",
    "reboot": "cordon, drain and reboot this node",
    "replace": "cordon, drain and replace this node",
}


def _evidence(finding: Finding) -> str:
    line = f"(injected) {finding.line}" if finding.fault.injected else finding.line
    if finding.repeats > 1:
        line = f"({finding.repeats}x) {line}"
    return line if len(line) <= 100 else line[:97] + "..."


def _table(judged: Judged, out: TextIO) -> None:
    """The faults of one input, in columns as wide as their widest cell, and its verdict."""
    if not judged.findings:
        out.write("no faults found\n")
    else:
        rows = [
            (str(f.line_no), f.fault.fault_id, f.fault.component, f.fault.action, _evidence(f))
            for f in judged.findings
        ]
        header = ("line", "fault", "component", "action", "evidence")
        widths = [max(len(row[n]) for row in [header, *rows]) for n in range(4)]
        for row in [header, *rows]:
            cells = [row[0].rjust(widths[0])]
            cells += [cell.ljust(width) for cell, width in zip(row[1:4], widths[1:], strict=True)]
            out.write("  ".join([*cells, row[4]]) + "\n")
    action, notes, waiting = judged.verdict
    out.write(f"\nverdict: {_SAYING['waiting' if action == 'none' and waiting else action]}\n")
    for note in notes:
        out.write(f"  - {note}\n")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log file, or - for stdin")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--catalog", type=Path, action="append", default=[], help="extra rule file")
    parser.add_argument(
        "--exit-code",
        action="store_true",
        help="exit with the strongest action of all inputs: 0 none, 1 notify, 3 reboot, "
        "4 replace (2 stays bad input)",
    )
    parser.add_argument(
        "--instance-type",
        default="",
        help="the node's EC2 type: how many GPUs and Neuron devices a dump should show "
        "(neuron-ls names its own)",
    )
    parser.add_argument(
        "--expect-efa-devices",
        type=int,
        default=0,
        help="EFA devices the node should have, for fi_info -p efa (default: at least one)",
    )


def _report(judged: Judged, out: TextIO, json_format: bool, many: bool) -> None:
    """One input's faults and verdict: JSON records, or a table (after a line naming the
    input when there are several, or when it is a dump)."""
    if json_format:
        for finding in judged.findings:
            out.write(json.dumps(finding.to_json()) + "\n")
        out.write(json.dumps(judged.to_json()) + "\n")
        return
    if many or judged.format != KERNEL_LOG:
        out.write(f"{judged.path}: read as {judged.format}\n")
    _table(judged, out)


def run(args: argparse.Namespace) -> int:
    expected = devices_of(args.instance_type) if args.instance_type else None
    if args.instance_type and expected is None:
        print(f"nodemedic triage: unknown instance type {args.instance_type!r}", file=sys.stderr)
        return BAD_INPUT
    # fi_info's count is the operator's to say: a type's EFA maximum is not what was attached.
    expected = dataclasses.replace(expected or Devices(), efa_interfaces=args.expect_efa_devices)
    try:
        catalog: Catalog = load_catalog(args.catalog)
    except CatalogError as exc:
        print(f"nodemedic triage: {exc}", file=sys.stderr)
        return BAD_INPUT
    classifier = Classifier(catalog)
    many, failed, reported, strongest = len(args.files) > 1, False, 0, "none"
    for path in args.files:
        try:
            judged = judge(path, classifier, expected)
        except InputError as exc:
            print(f"nodemedic triage: {exc}", file=sys.stderr)
            failed = True
            continue
        if reported and args.format == "table":
            sys.stdout.write("\n")
        _report(judged, sys.stdout, args.format == "json", many)
        reported += 1
        strongest = max(strongest, judged.verdict.action, key=ACTIONS.index)
    if failed:
        return BAD_INPUT
    return EXIT_CODES[strongest] if args.exit_code else 0
