"""One input's lines → its faults, as they are read, and the verdict they add up to.

``triage`` tells each fault as soon as its line is classified, so what it keeps of an input
is bounded by the catalog, never by the input: the first fault line of each rule and how
many lines hit it (``Tally``), which is all the verdict needs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from json.encoder import encode_basestring_ascii
from operator import attrgetter
from typing import NamedTuple

from nodemedic.catalog import Source
from nodemedic.contracts.logs import KERNEL_FACILITY, shipped_message
from nodemedic.detect.classifier import Classifier, Fault
from nodemedic.detect.hyperpod import is_detection
from nodemedic.detect.logformat import LogLine, log_line
from nodemedic.remediate.decision import INJECTED_ACTION

ACTIONS = ("none", "notify", "reboot", "replace")
"""A verdict's action, from the weakest to the strongest."""
KERNEL_LOG = "kernel-log"
"""The ``format`` of dmesg, journalctl -k, /dev/kmsg records and agent health results."""
_CHUNK = 4096
"""Lines classified at a time: large enough for the classifier's bulk search, small enough
that a fault is told a moment after its line is read."""
_BARE_MESSAGE = re.compile(r"^[A-Za-z][\w.\-]*(?: [\w.:\-\[\]]+){0,2}: \S")
"""A kernel message without a prefix starts with its driver or subsystem: ``NVRM: ``,
``nvidia-nvlink: ``, ``pci 0000:00:1f.0: ``."""
_REPEATS = attrgetter("repeats")
_MIDDLE = ("fault_id", "component", "action", "injected", "format", "kind", "file")
"""The keys of a fault record between its line and its ``repeats``: the same for every
line of one rule in one input, so encoded once."""


class Finding(NamedTuple):
    """One fault line of an input: a named tuple, as a storm makes one a line."""

    path: str
    line_no: int
    line: str
    fault: Fault
    format: str = KERNEL_LOG
    repeats: int = 1
    """How many lines the line stands for (syslog's ``message repeated N times``)."""
    injected: bool = False

    @property
    def acted(self) -> str:
        """The action this line asks for: its rule's, notify at most for a line the kernel
        did not log (a cluster with the default ``accept_injected_faults`` off)."""
        wanted = self.fault.action
        if self.injected and wanted != INJECTED_ACTION:
            return INJECTED_ACTION
        return wanted

    def to_json(self) -> dict[str, object]:
        """The stable ``--format json`` record; other tools parse it, so keys only grow.
        ``action`` is the rule's; ``injected`` says the line was not the kernel's (a raw
        record of another facility), which caps it at notify unless the cluster accepts
        injected faults. For a dump, ``line`` is the health result the agent would ship and
        ``line_no`` the dump's first line naming its device (0: the whole node); for a
        journal record (``journalctl -o json``), its ``MESSAGE``. ``kind`` tells it from
        the verdict object that ends each input, ``file`` is the path as given (``-``:
        stdin)."""
        return {
            "line_no": self.line_no,
            "line": self.line,
            "fault_id": self.fault.fault_id,
            "component": self.fault.component,
            "action": self.fault.action,
            "injected": self.injected,
            "format": self.format,
            "kind": "fault",
            "file": self.path,
            "repeats": self.repeats,
        }


class JsonRecords:
    """``Finding.to_json`` as text, a storm's worth a second: what a rule's lines share in
    one input is encoded once (the same text ``json.dumps`` gives)."""

    def __init__(self) -> None:
        self._middles: dict[tuple[str, bool, str, str], str] = {}

    def encode(self, found: Iterable[Finding]) -> str:
        """The records of ``found``, each on a line of its own."""
        middles, records = self._middles, []
        for finding in found:
            key = (finding.fault.rule.id, finding.injected, finding.format, finding.path)
            middle = middles.get(key) or self._middle(finding, key)
            records.append(
                f'{{"line_no": {finding.line_no}, "line": {encode_basestring_ascii(finding.line)}, '
                f'{middle}, "repeats": {finding.repeats}}}\n'
            )
        return "".join(records)

    def _middle(self, finding: Finding, key: tuple[str, bool, str, str]) -> str:
        record = finding.to_json()
        middle = ", ".join(
            f"{encode_basestring_ascii(name)}: {_scalar(record[name])}" for name in _MIDDLE
        )
        self._middles[key] = middle
        return middle


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return encode_basestring_ascii(str(value))


class Verdict(NamedTuple):
    action: str
    """One of ``ACTIONS``."""
    notes: list[str]
    """Each rule's part, for people."""
    waiting: list[str]
    """The faults whose rules wait for more evidence (a threshold not met)."""


@dataclass
class Tally:
    """What the verdict needs of an input's faults, kept as they go by.

    Thresholds are counted over the whole input, as triage has no reliable clock (a line
    syslog folded counts as the lines it stands for); injected lines count apart from
    kernel lines and ask for notify at most, as in a cluster that does not accept injected
    faults.
    """

    first: dict[tuple[str, bool], Finding] = field(default_factory=dict)
    lines: Counter[tuple[str, bool]] = field(default_factory=Counter)
    """Fault lines by rule and whether injected: the counts below are read off these at the
    end, not kept a line at a time (a storm's every line would pay for the action it asks)."""
    folded: Counter[tuple[str, bool]] = field(default_factory=Counter)
    """The lines beyond the first that syslog's folded lines stand for, by the same key."""

    def add(self, found: Sequence[Finding]) -> None:
        """Count a chunk's fault lines: each keyed once, and counted at C speed."""
        keys = [(finding.fault.rule.id, finding.injected) for finding in found]
        self.lines.update(keys)
        for key in dict.fromkeys(keys):
            if key not in self.first:
                self.first[key] = found[keys.index(key)]
        repeats = list(map(_REPEATS, found))
        if repeats.count(1) < len(repeats):
            for key, times in zip(keys, repeats, strict=True):
                self.folded[key] += times - 1

    def hits(self, key: tuple[str, bool]) -> int:
        """The lines a rule's fault lines stand for: a folded line counts as many."""
        return self.lines[key] + self.folded[key]

    @property
    def counts(self) -> Counter[str]:
        """Fault lines by the action each asks for (``Finding.acted``): a rule's lines, kernel
        or injected, all ask for the action of the first."""
        counts: Counter[str] = Counter()
        for key, lines in self.lines.items():
            counts[self.first[key].acted] += lines
        return counts

    @property
    def faults(self) -> int:
        return self.lines.total()

    @property
    def injected(self) -> int:
        return sum(lines for (_, injected), lines in self.lines.items() if injected)

    def verdict(self) -> Verdict:
        """The strongest action any rule asks for, and the explanation of each rule's part."""
        action, notes, waiting = "none", [], []
        for (fault_id, injected), finding in self.first.items():
            rule = finding.fault.rule
            needed = rule.threshold.count if rule.threshold else 1
            seen = self.hits((fault_id, injected))
            if seen < needed:
                waiting.append(fault_id)
                notes.append(
                    f"{fault_id}: seen {seen}x, acts at {needed} within "
                    f"{rule.threshold.window if rule.threshold else 0}s: no action yet"
                )
                continue
            wanted = finding.acted
            if wanted != finding.fault.action:
                notes.append(
                    f"{fault_id}: {finding.fault.action} asked by a line the kernel did not "
                    f"log (injected): {wanted} unless the cluster sets accept_injected_faults"
                )
            else:
                notes.append(f"{fault_id} ({rule.summary or rule.component}): {wanted}")
            action = max(action, wanted, key=ACTIONS.index)
        return Verdict(action, notes, waiting)


def message_source(message: str) -> Source:
    """Which rules a message of a file people keep is classified with: an agent health
    result's, a SageMaker HyperPod agent detection's, or a kernel line's (triage and the
    backtest read files alike)."""
    if is_detection(message):
        return "hyperpod"
    return "health" if message.startswith("{") and '"check"' in message else "kmsg"


def _shipped(entries: list[LogLine]) -> list[str]:
    """Each message as the agent ships it: marked injected where the line's own priority
    says another facility than the kernel's logged it (the formats without a priority,
    dmesg and the journal's ``kernel:`` lines, are taken for the kernel's). A comprehension,
    not a call a line: a storm's lines are all kernel lines."""
    return [
        entry.message
        if entry.facility is None or entry.facility == KERNEL_FACILITY
        else shipped_message(entry.message, entry.facility)
        for entry in entries
    ]


@dataclass
class KernelLogCheck:
    """Whether the lines read so far are a kernel log: none carries a message (empty, or a
    quiet journal's ``-- No entries --``), some carry a kernel log's prefix or are health
    results, a rule recognised one, or most read like bare kernel messages. Indentation is
    no prefix: an indented text is not taken for a log for that. Settled by the first
    line with a prefix, so a log's lines cost one test each after it."""

    settled: bool = False
    bare: int = 0
    countable: int = 0

    def see(self, entry: LogLine) -> None:
        message = entry.message
        if entry.raw.strip() != message or message_source(message) != "kmsg":
            self.settled = True
            return
        self.bare += _BARE_MESSAGE.match(message) is not None
        self.countable += not message.startswith("#")

    def holds(self, found: bool) -> bool:
        if self.settled or found or not self.countable:
            return True
        return self.bare > 0 and self.bare * 2 >= self.countable


def _entries(chunk: list[str], offset: int, picked: Iterable[int]) -> list[LogLine]:
    """The messages of the ``picked`` lines of a chunk that starts after line ``offset``."""
    return [
        entry
        for n in picked
        if (entry := log_line(offset + n + 1, chunk[n].rstrip("\r\n"))) is not None
    ]


def _picked(chunk: list[str], classifier: Classifier) -> Iterable[int]:
    """The lines of a chunk that may have a fault: a rule's needle or a health result or
    journal record (JSON, whose escapes may hide a needle) in the line as read. Only they
    are parsed: most of a whole log is passed over at C speed."""
    suspects = classifier.suspects(chunk)
    if suspects is None:
        return range(len(chunk))
    records = [n for n, line in enumerate(chunk) if line.lstrip()[:1] == "{"]
    return sorted({*suspects, *records}) if records else sorted(suspects)


def kernel_findings(
    path: str, lines: Iterable[str], classifier: Classifier, check: KernelLogCheck
) -> Iterator[list[Finding]]:
    """The faults of one file in line order, a chunk of lines at a time (a list for each,
    empty for a clean chunk). Kernel lines and health results are each classified in bulk,
    as the Lambda does, so a large log is read at storm speed; once the lines are known
    for a kernel log, only those that may have a fault are parsed at all."""
    lines, offset, dense = iter(lines), 0, False
    while chunk := list(islice(lines, _CHUNK)):
        if check.settled and not dense:
            entries = _entries(chunk, offset, _picked(chunk, classifier))
        else:
            entries = _entries(chunk, offset, range(len(chunk)))
            for entry in entries if not check.settled else ():
                check.see(entry)
        offset += len(chunk)
        by_source: dict[Source, list[LogLine]] = {"kmsg": entries, "health": [], "hyperpod": []}
        # Only a message that starts with "{" can be anything but a kernel line; a kernel's
        # own "{1}[Hardware Error]: " lines are, so a storm of them is not split line by line.
        braced = [entry.message for entry in entries if entry.message[:1] == "{"]
        if any(message_source(message) != "kmsg" for message in braced):
            # rare: agent health results or HyperPod's detections among kernel lines
            by_source["kmsg"] = []
            for entry in entries:
                by_source[message_source(entry.message)].append(entry)
        found = [
            (entries_of[index], fault)
            for source, entries_of in by_source.items()
            if entries_of
            for index, fault in classifier.classify_lines(_shipped(entries_of), source)
        ]
        if sum(map(bool, by_source.values())) > 1:
            found.sort(key=lambda pair: pair[0].line_no)
        # Where most lines are faults (a storm), the search for needles in the lines as
        # read only doubles the classifier's own: parse every line of the next chunk.
        dense = len(found) * 2 > len(chunk)
        # A finding shows its line as read, or a journal record's message; made as a tuple
        # of the class (every field given), without the named tuple's Python-level
        # ``__new__``, a third of what making one a fault line costs.
        yield [
            tuple.__new__(
                Finding,
                (
                    path,
                    entry.line_no,
                    entry.message if entry.raw.lstrip()[:1] == "{" else entry.raw,
                    fault,
                    KERNEL_LOG,
                    entry.repeats,
                    fault.line[:1] == "[" and fault.injected,
                ),
            )
            for entry, fault in found
        ]
