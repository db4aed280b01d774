"""``nodemedic triage``: what would nodemedic do to the node these logs and dumps came from?

Offline and local: reads ``dmesg``, ``journalctl -k``, raw ``/dev/kmsg`` records or agent
health results, classifies each message with the same catalog and classifier the Lambda
uses, and prints the faults and a verdict. A raw record whose facility is not the
kernel's is an injected line, as the agent would mark it: the verdict holds it to what a
cluster with the default ``accept_injected_faults`` (off) does, notify.

It reads the dumps an engineer takes on a node too (``nvidia-smi -q -x`` and ``-q``,
``dcgmi diag``, ``neuron-ls``, ``fi_info -p efa``: ``nodemedic.dumps``), recognised by their
content: each becomes the health results the agent would ship, judged by the same rules.
A file in none of these formats is refused (exit 2), never given a clean verdict.
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
from typing import TextIO

from nodemedic.catalog import Catalog, CatalogError, Source, load_catalog
from nodemedic.contracts.logs import KERNEL_FACILITY, shipped_message
from nodemedic.detect.classifier import Classifier, Fault
from nodemedic.detect.logformat import LogLine, messages
from nodemedic.dumps import FORMATS, DumpFormat, dump_format
from nodemedic.health.instance_types import Devices, devices_of
from nodemedic.remediate.decision import INJECTED_ACTION

_SEVERITY_OF_ACTION = {"notify": 1, "reboot": 2, "replace": 3}
_MAX_UNDECODABLE = 0.01
KERNEL_LOG = "kernel-log"
"""The ``format`` of dmesg, journalctl -k, /dev/kmsg records and agent health results."""
_BARE_MESSAGE = re.compile(r"^[A-Za-z][\w.\-]*(?: [\w.:\-\[\]]+){0,2}: \S")
"""A kernel message without a prefix starts with its driver or subsystem: ``NVRM: ``,
``nvidia-nvlink: ``, ``pci 0000:00:1f.0: ``."""


class InputError(Exception):
    """A file that is not a kernel log; the message is one line for the user."""


@dataclass(frozen=True)
class Finding:
    path: str
    line_no: int
    line: str
    fault: Fault
    format: str = KERNEL_LOG

    def to_json(self) -> dict[str, object]:
        """The stable ``--format json`` record; other tools parse it, so keys only grow.
        ``action`` is the rule's; ``injected`` says the line was not the kernel's (a raw
        record of another facility), which caps it at notify unless the cluster accepts
        injected faults. For a dump, ``line`` is the health result the agent would ship and
        ``line_no`` the dump's first line naming its device (0: the whole node)."""
        return {
            "line_no": self.line_no,
            "line": self.line,
            "fault_id": self.fault.fault_id,
            "component": self.fault.component,
            "action": self.fault.action,
            "injected": self.fault.injected,
            "format": self.format,
        }


def read_text(path: str) -> str:
    """The file's text; refuses binary data rather than reporting nonsense about it."""
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
    return text


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


def _is_kernel_log(entries: list[LogLine], found: bool) -> bool:
    """Whether the lines are a kernel log: some carry a kernel log's prefix or are health
    results, a rule recognised one, or most read like bare kernel messages."""
    if found or any(e.raw != e.message or _looks_like_health(e.message) for e in entries):
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


def file_faults(
    path: str, classifier: Classifier, expected: Devices | None
) -> tuple[str, list[Finding]]:
    """(the format the file is in, its faults); raises InputError for a file in none."""
    text = read_text(path)
    dump = dump_format(text)
    if dump is not None:
        return dump.name, dump_faults(path, text, dump, classifier, expected)
    lines = text.splitlines()
    findings = find_faults(path, lines, classifier)
    if not _is_kernel_log(list(messages(lines)), bool(findings)):
        known = ", ".join([KERNEL_LOG] + [f.name for f in FORMATS])
        raise InputError(f"{path}: not in a format triage reads ({known})")
    return KERNEL_LOG, findings


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
    "waiting": "no action yet: the rules below act on more evidence",
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
    saying = _SAYING["waiting" if action == "nothing" and findings else action]
    out.write(f"\nverdict: {saying}\n")
    for note in notes:
        out.write(f"  - {note}\n")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log file, or - for stdin")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--catalog", type=Path, action="append", default=[], help="extra rule file")
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
        return 2
    # fi_info's count is the operator's to say: a type's EFA maximum is not what was attached.
    expected = dataclasses.replace(expected or Devices(), efa_interfaces=args.expect_efa_devices)
    try:
        catalog: Catalog = load_catalog(args.catalog)
        classifier = Classifier(catalog)
        findings: list[Finding] = []
        formats: list[tuple[str, str]] = []
        for path in args.files:
            found_format, found = file_faults(path, classifier, expected)
            formats.append((path, found_format))
            findings.extend(found)
    except (InputError, CatalogError) as exc:
        print(f"nodemedic triage: {exc}", file=sys.stderr)
        return 2
    if args.format == "table":
        for path, found_format in formats:
            if found_format != KERNEL_LOG:
                sys.stdout.write(f"{path}: read as {found_format}\n")
    if args.format == "json":
        for finding in findings:
            sys.stdout.write(json.dumps(finding.to_json()) + "\n")
    else:
        _table(findings, sys.stdout, len(args.files) > 1)
    return 0
