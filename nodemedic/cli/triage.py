"""``nodemedic triage``: what would nodemedic do to the node these kernel logs came from?

Offline and local: reads ``dmesg``, ``journalctl -k``, raw ``/dev/kmsg`` records or agent
health results, classifies each message with the same catalog and classifier the Lambda
uses, and prints the faults and a verdict. A raw record whose facility is not the
kernel's is an injected line, as the agent would mark it: the verdict holds it to what a
cluster with the default ``accept_injected_faults`` (off) does, notify.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from nodemedic.catalog import Catalog, CatalogError, Source, load_catalog
from nodemedic.contracts import KERNEL_FACILITY, shipped_message
from nodemedic.detect.classifier import Classifier, Fault
from nodemedic.detect.logformat import LogLine, messages
from nodemedic.remediate.decision import INJECTED_ACTION

_SEVERITY_OF_ACTION = {"notify": 1, "reboot": 2, "replace": 3}
_MAX_UNDECODABLE = 0.01


class InputError(Exception):
    """A file that is not a kernel log; the message is one line for the user."""


@dataclass(frozen=True)
class Finding:
    path: str
    line_no: int
    line: str
    fault: Fault

    def to_json(self) -> dict[str, object]:
        """The stable ``--format json`` record; other tools parse it, so keys only grow.
        ``action`` is the rule's; ``injected`` says the line was not the kernel's (a raw
        record of another facility), which caps it at notify unless the cluster accepts
        injected faults."""
        return {
            "line_no": self.line_no,
            "line": self.line,
            "fault_id": self.fault.fault_id,
            "component": self.fault.component,
            "action": self.fault.action,
            "injected": self.fault.injected,
        }


def read_text(path: str) -> list[str]:
    """The file's lines; refuses binary data rather than reporting nonsense about it."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\0" in data[:65536]:
        raise InputError(f"{path}: binary data, not a kernel log (dmesg, journalctl -k, kmsg)")
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) * _MAX_UNDECODABLE):
        raise InputError(f"{path}: not text in UTF-8, not a kernel log")
    return text.splitlines()


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
        Finding(path=path, line_no=entries[index].line_no, line=entries[index].raw, fault=fault)
        for source, entries in by_source.items()
        for index, fault in classifier.classify_lines(map(_as_shipped, entries), source)
    ]
    return sorted(findings, key=lambda finding: finding.line_no)


def verdict(findings: list[Finding]) -> tuple[str, list[str]]:
    """The strongest action any rule asks for, and the explanation of each rule's part.

    Thresholds are counted over the whole input, as triage has no reliable clock; injected
    lines count apart from kernel lines and ask for notify at most, as in a cluster that
    does not accept injected faults.
    """
    hits = Counter((f.fault.fault_id, f.fault.injected) for f in findings)
    first: dict[tuple[str, bool], Finding] = {}
    for finding in findings:
        first.setdefault((finding.fault.fault_id, finding.fault.injected), finding)
    action, notes = "nothing", []
    for (fault_id, injected), finding in first.items():
        rule = finding.fault.rule
        needed = rule.threshold.count if rule.threshold else 1
        seen = hits[fault_id, injected]
        if seen < needed:
            notes.append(
                f"{fault_id}: seen {seen}x, acts at {needed} within "
                f"{rule.threshold.window if rule.threshold else 0}s: no action yet"
            )
            continue
        wanted = rule.action
        if injected and wanted != INJECTED_ACTION:
            wanted = INJECTED_ACTION
            notes.append(
                f"{fault_id}: {rule.action} asked by a line the kernel did not log (injected): "
                f"{wanted} unless the cluster sets accept_injected_faults"
            )
        else:
            notes.append(f"{fault_id} ({rule.summary or rule.component}): {wanted}")
        if _SEVERITY_OF_ACTION[wanted] > _SEVERITY_OF_ACTION.get(action, 0):
            action = wanted
    return action, notes


_SAYING = {
    "nothing": "leave this node alone",
    "notify": "notify, leave the node in service",
    "reboot": "cordon, drain and reboot this node",
    "replace": "cordon, drain and replace this node",
}


def _table(findings: list[Finding], out: TextIO, many_files: bool) -> None:
    if not findings:
        out.write("no faults found\n")
    else:
        place = "file:line" if many_files else "line"
        out.write(f"{place:>10}  {'fault':<34} {'component':<9} {'action':<8} evidence\n")
        for f in findings:
            where = f"{f.path}:{f.line_no}" if many_files else str(f.line_no)
            line = f"(injected) {f.line}" if f.fault.injected else f.line
            line = line if len(line) <= 100 else line[:97] + "..."
            out.write(
                f"{where:>10}  {f.fault.fault_id:<34} {f.fault.component:<9} "
                f"{f.fault.action:<8} {line}\n"
            )
    action, notes = verdict(findings)
    out.write(f"\nverdict: {_SAYING[action]}\n")
    for note in notes:
        out.write(f"  - {note}\n")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log file, or - for stdin")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--catalog", type=Path, action="append", default=[], help="extra rule file")


def run(args: argparse.Namespace) -> int:
    try:
        catalog: Catalog = load_catalog(args.catalog)
        classifier = Classifier(catalog)
        findings: list[Finding] = []
        for path in args.files:
            findings.extend(find_faults(path, read_text(path), classifier))
    except (InputError, CatalogError) as exc:
        print(f"nodemedic triage: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        for finding in findings:
            sys.stdout.write(json.dumps(finding.to_json()) + "\n")
    else:
        _table(findings, sys.stdout, len(args.files) > 1)
    return 0
