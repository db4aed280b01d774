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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from console.findings import (
    ACTIONS,
    KERNEL_LOG,
    Finding,
    JsonRecords,
    KernelLogCheck,
    Tally,
    Verdict,
    kernel_findings,
)
from console.inputs import InputError, LogFile, few_collections
from nodemedic.catalog import Catalog, CatalogError, load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.dumps import FORMATS, DumpFormat, dump_format
from nodemedic.health.instance_types import Devices, devices_of

EXIT_CODES = {"none": 0, "notify": 1, "reboot": 3, "replace": 4}
"""``--exit-code``: the strongest action of all inputs; 2 stays bad input, with or without
the flag, and wins over any action (an input was not judged)."""
BAD_INPUT = 2


@dataclass(frozen=True)
class Judged:
    """One input, read and judged."""

    path: str
    format: str
    lines: int
    tally: Tally
    skipped: dict[str, int]

    @property
    def verdict(self) -> Verdict:
        return self.tally.verdict()

    def to_json(self) -> dict[str, object]:
        """The verdict object that ends an input's ``--format json`` records: one key,
        ``verdict``, so that nothing a fault line has (``fault_id``, ``action``, ...) is met
        at its top level and a reader of fault lines passes it over. ``action`` is one of
        ``ACTIONS``; ``counts`` the fault lines by the action each asks for (an injected
        line's is notify at most, as in the verdict), ``injected`` how many of them the
        kernel did not log, ``skipped`` what of the file was not text."""
        judged = self.verdict
        return {
            "verdict": {
                "file": self.path,
                "format": self.format,
                "action": judged.action,
                "lines": self.lines,
                "faults": self.tally.faults,
                "counts": {action: self.tally.counts[action] for action in ACTIONS[1:]},
                "waiting": judged.waiting,
                "injected": self.tally.injected,
                "skipped": self.skipped,
            }
        }


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
            injected=fault.injected,
        )
        for index, fault in classifier.classify_lines(shipped, "health")
    ]


class _Report:
    """One input's faults told as they are found, then its verdict: JSON records, or a
    table in columns as wide as the catalog's widest cell (after a line naming the input
    when there are several, or when it is a dump)."""

    def __init__(self, out: TextIO, json_format: bool, many: bool, catalog: Catalog) -> None:
        self.out, self.json, self.many = out, json_format, many
        self.records = JsonRecords()
        self.widths = [
            6,
            max(len(rule.id) for rule in catalog.rules),
            max(len(rule.component) for rule in catalog.rules),
            max(map(len, ACTIONS)),
        ]
        self.reported = 0
        self._started = False

    def start(self, path: str, format: str) -> None:
        """Called before an input's first output; the table's head waits for a fault or
        the verdict, so that an input refused part-way leaves no head behind."""
        self.path, self.format, self._started = path, format, False

    def _head(self) -> None:
        if self._started:
            return
        self._started = True
        if self.json:
            return
        if self.reported:
            self.out.write("\n")
        if self.many or self.format != KERNEL_LOG:
            self.out.write(f"{self.path}: read as {self.format}\n")

    def findings(self, found: list[Finding]) -> None:
        if not found:
            return
        if self.json:
            self.out.write(self.records.encode(found))
        else:
            if not self._started:
                self._head()
                self._row(("line", "fault", "component", "action", "evidence"))
            for f in found:
                self._row(
                    (
                        str(f.line_no),
                        f.fault.fault_id,
                        f.fault.component,
                        f.fault.action,
                        _evidence(f),
                    )
                )
        self.out.flush()

    def _row(self, row: tuple[str, str, str, str, str]) -> None:
        cells = [row[0].rjust(self.widths[0])]
        cells += [cell.ljust(width) for cell, width in zip(row[1:4], self.widths[1:], strict=True)]
        self.out.write("  ".join([*cells, row[4]]) + "\n")

    def end(self, judged: Judged) -> None:
        if self.json:
            self.out.write(json.dumps(judged.to_json()) + "\n")
        else:
            if not self._started:
                self._head()
                self.out.write("no faults found\n")
            action, notes, waiting = judged.verdict
            saying = _SAYING["waiting" if action == "none" and waiting else action]
            self.out.write(f"\nverdict: {saying}\n")
            for note in notes:
                self.out.write(f"  - {note}\n")
            if judged.skipped:
                self.out.write(f"  (read through {_skipped(judged.skipped)})\n")
        self.out.flush()
        self.reported += 1


_PASSED_OVER = {"nul_bytes": "NUL bytes", "lines_not_text": "lines that are not text"}


def _skipped(skipped: dict[str, int]) -> str:
    return " and ".join(f"{count} {_PASSED_OVER[what]}" for what, count in skipped.items())


def judge(path: str, classifier: Classifier, expected: Devices | None, report: _Report) -> Judged:
    """One input's format, length and faults, each fault told to ``report`` as it is
    found; raises InputError for a file in none of the formats."""
    with LogFile(path) as log, few_collections():
        dump = dump_format(log.head())
        report.start(path, dump.name if dump else KERNEL_LOG)
        tally = Tally()
        if dump is not None:
            text = log.text()
            found = dump_faults(path, text, dump, classifier, expected)
            lines = len(text.splitlines())
            _tell(found, tally, report)
        else:
            check = KernelLogCheck()
            for found in kernel_findings(path, log.lines(), classifier, check):
                _tell(found, tally, report)
            log.refuse_binary()
            if not check.holds(tally.faults > 0):
                known = ", ".join([KERNEL_LOG] + [f.name for f in FORMATS])
                raise InputError(f"{path}: not in a format triage reads ({known})")
            lines = log.lines_read
        skipped = {"nul_bytes": log.nul_bytes, "lines_not_text": log.skipped_lines}
    return Judged(
        path,
        report.format,
        lines,
        tally,
        {what: count for what, count in skipped.items() if count},
    )


def _tell(found: list[Finding], tally: Tally, report: _Report) -> None:
    tally.add(found)
    report.findings(found)


_SAYING = {
    "none": "leave this node alone",
    "waiting": "no action yet: the rules below act on more evidence",
    "notify": "notify, leave the node in service",
    "reboot": "cordon, drain and reboot this node",
    "replace": "cordon, drain and replace this node",
}


def _evidence(finding: Finding) -> str:
    line = f"(injected) {finding.line}" if finding.injected else finding.line
    if finding.repeats > 1:
        line = f"({finding.repeats}x) {line}"
    return line if len(line) <= 100 else line[:97] + "..."


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
    report = _Report(sys.stdout, args.format == "json", len(args.files) > 1, catalog)
    failed, strongest = False, "none"
    for path in args.files:
        try:
            judged = judge(path, classifier, expected, report)
        except InputError as exc:
            sys.stdout.flush()
            print(f"nodemedic triage: {exc}", file=sys.stderr)
            failed = True
            continue
        report.end(judged)
        strongest = max(strongest, judged.verdict.action, key=ACTIONS.index)
    if failed:
        return BAD_INPUT
    return EXIT_CODES[strongest] if args.exit_code else 0
