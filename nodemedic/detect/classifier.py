"""Line → fault, fast enough for a log storm from one bad node.

The naive way (``re.search`` with every rule on every line) costs one regex per rule per
line. Here rules that share a pattern are evaluated by one search followed by a table
lookup on the captured value (every Xid is one search, not 150), and a pattern is tried
only on a line that holds its needle, the longest literal it cannot match without. A batch
of lines is joined into one text in which each needle is found with ``str.find``, so most
kernel lines, which hold no needle, are passed over at C speed without one Python step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, compress, count, islice
from operator import itemgetter
from typing import Any, NamedTuple, get_args

from nodemedic.catalog import Catalog, Rule, Source, acted, load_catalog
from nodemedic.contracts.logs import (
    HEARTBEAT_MARK,
    INJECTED_MARK,
    PREVIOUS_BOOT_MARK,
    SIGNATURE_MARK,
    UnparsableLine,
    json_line,
    read_heartbeat,
    split_injected,
    split_previous_boot,
    split_signature,
)
from nodemedic.detect.groups import (
    Group,
    Start,
    catalog_order,
    group_of,
    needle_search,
    scan_needles,
    start_of,
)
from nodemedic.detect.hyperpod import hyperpod_text
from nodemedic.detect.matching import PREFIX, Found

_CHUNK = 1024
_UNIONS = 4096
"""The most unions of candidates kept: a bound on what lines holding needles in
combinations no log repeats can cost."""
MAX_LINE = 8192
r"""Characters of a line the rules are matched against. A kernel record holds at most 1 KiB
of text and ``/dev/kmsg`` hands out at most 8 KiB per record, escapes included
(CONSOLE_EXT_LOG_MAX), so no real line is longer; a longer one is cut before matching,
which bounds what one line costs: a pattern such as ``\(device (?P<dev>[^)]+)\)`` takes
time quadratic in the length of a line that repeats its prefix without the ``)``."""


class Fault(NamedTuple):
    """One rule matched one line.

    A named tuple, not a frozen dataclass: a storm builds one per fault line, and a tuple
    is built in half the time.
    """

    rule: Rule
    line: str
    found: Found

    @property
    def groups(self) -> Mapping[str, str]:
        """The named groups the rule's pattern captured (absent optional ones left out)."""
        return {name: value for name, value in self.found.groupdict().items() if value is not None}

    @property
    def fault_id(self) -> str:
        return self.rule.id

    @property
    def component(self) -> str:
        return self.rule.component

    @property
    def action(self) -> str:
        """As a cluster with the default settings acts on it (``gpu_reset`` off)."""
        return acted(self.rule.action, gpu_reset=False)

    @property
    def severity(self) -> str:
        return self.rule.severity

    @property
    def injected(self) -> bool:
        """The line is marked as not logged by the kernel (``contracts.INJECTED_MARK``)."""
        return split_injected(split_previous_boot(split_signature(self.line)[1])[1])[0]

    @property
    def previous_boot(self) -> bool:
        """The line was logged by a boot that died (``contracts.PREVIOUS_BOOT_MARK``)."""
        return split_previous_boot(split_signature(self.line)[1])[0]


HEALTH_FIELDS = ("check", "status", "reason", "device")
"""What a health result line must hold for the rules (docs/contracts.md)."""


def health_result(line: str) -> dict[str, Any]:
    """The fields of a health result line (or a deep check's); UnparsableLine when it is
    none: not JSON, longer or nested deeper than a result can be, not an object, or one of
    ``HEALTH_FIELDS`` missing."""
    result = json_line(line, MAX_LINE)
    if not isinstance(result, dict):
        raise UnparsableLine("not a JSON object")
    missing = [name for name in HEALTH_FIELDS if name not in result]
    if missing:
        raise UnparsableLine(f"no {', '.join(missing)}")
    return result


def health_text(line: str) -> str | None:
    """The text health rules match: ``"<check> <status> <reason> <device>"``; None for a
    line that is no health result.

    Health results are JSON; matching a canonical text keeps rules independent of key
    order and spacing in the JSON the agent writes.
    """
    try:
        result = health_result(line)
    except UnparsableLine:
        return None
    return " ".join(str(result[name]) for name in HEALTH_FIELDS)


def unparsable_lines(lines: Sequence[str], source: Source) -> Iterator[tuple[int, str]]:
    """(index, why) of each of ``lines`` (behind their signatures) that is not what a
    ``source`` stream carries: a health or deep-check line that is no health result, a
    HyperPod event that is neither a detection nor a deep health check result, a kmsg line
    that has the heartbeat's mark and no heartbeat's state. Any other kmsg line is a kernel
    line, whatever its text."""
    for index, line in enumerate(lines):
        try:
            if source == "hyperpod":
                hyperpod_text(line, MAX_LINE)
            elif source != "kmsg":
                health_result(line)
            elif line.startswith(HEARTBEAT_MARK):
                read_heartbeat(line)
        except UnparsableLine as exc:
            yield index, str(exc)


def _text(line: str, source: Source) -> str:
    """What ``source``'s rules match in ``line``: a kernel line's message without the
    signature, previous-boot and injected marks (rules match from the message's start), a health
    result's or a HyperPod event's canonical text; empty for a health line that is no health
    result or a HyperPod event that is unparsable, which then has no fault."""
    cut = line[:MAX_LINE]
    if source == "hyperpod":
        try:
            return hyperpod_text(cut, MAX_LINE)
        except UnparsableLine:
            return ""
    if source != "kmsg":
        return health_text(cut) or ""
    if cut[:1] != "[":
        return cut
    return split_injected(split_previous_boot(split_signature(cut)[1])[1])[1]


_MARKS = tuple(
    mark[: mark.index("{")] for mark in (SIGNATURE_MARK, PREVIOUS_BOOT_MARK, INJECTED_MARK)
)
"""How each mark a kernel line may start with (``_text``) starts."""


def _texts(lines: Sequence[str], source: Source) -> list[str]:
    """``_text`` of each line; the lines themselves (cut) where no mark is in any of them,
    found at C speed: a Python step a line would cost a fifth of what classifying a line
    of a boot log costs."""
    if source != "kmsg":
        return [_text(line, source) for line in lines]
    texts = list(map(_cut, lines)) if max(map(len, lines), default=0) > MAX_LINE else list(lines)
    joined = "".join(texts)
    if any(mark in joined for mark in _MARKS):
        # The marks start with "[": a storm's lines are mostly passed over without a call.
        return [text if text[:1] != "[" else _text(text, source) for text in texts]
    return texts


@dataclass(frozen=True, slots=True)
class _Index:
    """The groups of one source, by the needle that lets a line reach them."""

    by_needle: Mapping[str, tuple[Group, ...]]
    suspected: Callable[[str], bool]
    """Whether a line holds any needle (``needle_search``)."""
    always: tuple[Group, ...]
    """Groups with no needle, in catalog order: candidates for every line."""
    by_start: Mapping[str, Start]
    """The groups whose matches start with a few known characters, by those: in bulk, a
    line reaches them by its first characters, not by a search of every line for each of
    their needles."""
    searched: Mapping[str, tuple[Group, ...]]
    """The needles of the other groups, searched for in bulk."""
    unions: dict[tuple[tuple[Group, ...], ...], tuple[Group, ...]] = field(default_factory=dict)
    """The candidates of a line by the group tuples of the needles it holds (``_candidates``)."""

    def fault(self, line: str, text: str) -> Fault | None:
        """The fault of one line (matched as ``text``): for one line, an ``in`` test per
        needle is cheaper than making a text of it. An empty text has no fault."""
        if not text:
            return None
        found = [groups for needle, groups in self.by_needle.items() if needle in text]
        if not found and not self.always:
            return None
        return _first_fault(line, text, self._candidates(found))

    def faults(self, lines: Sequence[str], texts: Sequence[str]) -> Iterator[tuple[int, Fault]]:
        """(index, fault) for each of ``lines`` (matched as ``texts``) that has a fault."""
        found = self.needles_found(texts, self.searched)
        self._add_started(texts, found)
        numbers: Iterable[int] = (
            sorted(found) if not self.always else (i for i, text in enumerate(texts) if text)
        )
        for number in numbers:
            candidates = self._candidates(found.get(number, []))
            fault = _first_fault(lines[number], texts[number], candidates)
            if fault is not None:
                yield number, fault

    def _add_started(self, texts: Sequence[str], found: dict[int, list[tuple[Group, ...]]]) -> None:
        """Add to ``found`` the groups each text reaches by its first characters (``Start``).

        Each text's plan is looked up at C speed (``map``), and only the texts that have one
        take a Python step per needle of their plan, until one holds it: a driver's chatter
        is tested for every needle, a storm's fault lines for a few. Where those that hold
        one are a few of the texts (a boot log's chatter), they are matched against their
        plan's patterns at once, at C speed again; in a storm, where most are fault lines,
        that would only match each line twice."""
        plans = list(map(self.by_start.get, map(_start_of, texts)))
        by_plan: dict[Start, list[int]] = {}
        for number, plan in zip(compress(count(), plans), filter(None, plans), strict=True):
            by_plan.setdefault(plan, []).append(number)
        held = [(plan, plan.holding(numbers, texts)) for plan, numbers in by_plan.items()]
        sparse = sum(len(numbers) for _, numbers in held) * 2 <= len(texts)
        for plan, numbers in held:
            matched = (
                compress(numbers, map(plan.matches, map(texts.__getitem__, numbers)))
                if sparse and plan.matches is not None
                else numbers
            )
            for number in matched:
                found.setdefault(number, []).append(plan.groups)

    def _candidates(self, found: list[tuple[Group, ...]]) -> Sequence[Group]:
        """The groups of the needles a line holds, and those with none, in catalog order;
        each union made once (``unions``), as a storm's lines hold the same few needles."""
        if len(found) == 1 and not self.always:
            return found[0]
        key = tuple(found)
        union = self.unions.get(key)
        if union is None:
            if len(self.unions) >= _UNIONS:
                self.unions.clear()
            union = tuple(
                sorted(
                    {g for groups in found for g in groups}.union(self.always), key=catalog_order
                )
            )
            self.unions[key] = union
        return union

    def needles_found(
        self, texts: Sequence[str], needles: Mapping[str, tuple[Group, ...]]
    ) -> dict[int, list[tuple[Group, ...]]]:
        """For each text that holds one of ``needles``, the group tuples of those it holds.

        The texts are joined without a separator, so a text starts where the lengths of
        those before it add up to: a needle met across two texts marks the first of them,
        which its groups then do not match (``_first_fault`` looks for their needles in
        the text itself), a rare extra candidate for one addition less a line."""
        text = "".join(texts)
        starts = list(accumulate(map(len, texts), initial=0))
        found: dict[int, list[tuple[Group, ...]]] = {}
        find = text.find
        for needle, groups in needles.items():
            at = find(needle)
            while at >= 0:
                number = bisect_right(starts, at) - 1
                found.setdefault(number, []).append(groups)
                at = find(needle, starts[number + 1])  # one hit per line is enough
        return found


_start_of = itemgetter(slice(0, PREFIX))


_cut = itemgetter(slice(0, MAX_LINE))


def _first_fault(line: str, text: str, candidates: Iterable[Group]) -> Fault | None:
    """The fault of the first rule (in catalog order) of ``candidates`` that ``text``
    meets; None when there is none or that rule says ``ignore``. A group reached by its
    first characters or by a shorter needle may lack its own needle: an ``in`` test, here
    without a call, costs a fraction of a search."""
    best: tuple[int, Rule, Found] | None = None
    for group in candidates:
        if best is not None and group.first > best[0]:
            break
        needle = group.needle
        if needle is not None and needle not in text:
            continue
        hit = group.first_match(text)
        if hit is not None and (best is None or hit[0] < best[0]):
            best = hit
    if best is None or best[1].action == "ignore":
        return None
    # Made as a tuple of the class (every field given), without the Python-level
    # ``__new__`` a named tuple has: a third of what making one costs, once a fault line.
    return tuple.__new__(Fault, (best[1], line, best[2]))


class Classifier:
    """A catalog compiled for matching; build once, use for every line."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        grouped: dict[tuple[Source, str], list[tuple[int, Rule]]] = {}
        for index, rule in enumerate(catalog.rules):
            grouped.setdefault((rule.source, rule.pattern), []).append((index, rule))
        self._indexes: dict[Source, _Index] = {}
        for source in get_args(Source):
            groups = sorted(
                (
                    group_of(rules, catalog.user)
                    for (src, _), rules in grouped.items()
                    if src == source
                ),
                key=catalog_order,
            )
            by_start: dict[str, list[Group]] = {}
            for group in groups:
                for start in group.starts or ():
                    by_start.setdefault(start, []).append(group)
            needles = scan_needles(groups)
            self._indexes[source] = _Index(
                by_needle=needles,
                suspected=needle_search(needles),
                always=tuple(g for g in groups if g.needle is None and g.starts is None),
                by_start={start: start_of(found) for start, found in by_start.items()},
                searched=scan_needles([g for g in groups if g.starts is None]),
            )

    def classify(self, line: str, source: Source = "kmsg") -> Fault | None:
        """The fault of the first rule (in catalog order) that matches ``line``, if any.

        A line whose first matching rule has ``action: ignore`` has no fault.
        """
        return self._indexes[source].fault(line, _text(line, source))

    def suspects(self, texts: Sequence[str]) -> Collection[int] | None:
        """The indexes of ``texts`` that may hold a kernel line's fault, found at C speed:
        those holding a needle; None where any may (a rule without a needle). Any text that
        holds a kernel message (a log line with its prefix) will do: a rule's needle is in
        the message, so in the line."""
        index = self._indexes["kmsg"]
        return None if index.always else list(compress(count(), map(index.suspected, texts)))

    def classify_lines(
        self, lines: Iterable[str], source: Source = "kmsg"
    ) -> Iterator[tuple[int, Fault]]:
        """(index, fault) for each line that has one; clean lines yield nothing.

        Lines are taken a chunk at a time, so a stream of any length is classified in
        bounded memory while each chunk is searched as one text.
        """
        index = self._indexes[source]
        lines = iter(lines)
        offset = 0
        while chunk := list(islice(lines, _CHUNK)):
            texts = _texts(chunk, source)
            for number, fault in index.faults(chunk, texts):
                yield offset + number, fault
            offset += len(chunk)


@cache
def default_classifier() -> Classifier:
    """The classifier of the built-in catalog plus NODEMEDIC_CATALOG_EXTRA, built once per
    process (a Lambda container reuses it across invocations)."""
    return Classifier(load_catalog())


def classify(line: str, source: Source = "kmsg") -> Fault | None:
    return default_classifier().classify(line, source)
