"""Line → fault, fast enough for a log storm from one bad node.

The naive way (``re.search`` with every rule on every line) costs one regex per rule per
line. Here rules that share a pattern are evaluated by one search followed by a table
lookup on the captured value (every Xid is one search, not 150), and a line is only
searched at all when it contains a literal that the pattern cannot match without. Most
kernel lines contain none of those literals and are rejected by one scan of a regex that
is the alternation of all of them, without a single Python-level step per rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Any

from lambdas.catalog import Catalog, Rule, Source, load_catalog

# The stdlib's own regex parser, only to find the literals a pattern requires (3.11+).
sre_parse: Any = import_module("re._parser")

_MIN_NEEDLE = 3


@dataclass(frozen=True, slots=True)
class Fault:
    """One rule matched one line."""

    rule: Rule
    line: str
    groups: Mapping[str, str]

    @property
    def fault_id(self) -> str:
        return self.rule.id

    @property
    def component(self) -> str:
        return self.rule.component

    @property
    def action(self) -> str:
        return self.rule.action

    @property
    def severity(self) -> str:
        return self.rule.severity


def required_literal(pattern: str) -> str | None:
    """The longest literal that every match of ``pattern`` contains, or None.

    Only top-level literal runs count: anything inside a repeat or an alternation may be
    absent from a match. Case-insensitive patterns give no needle (a plain ``in`` test
    would wrongly reject lines).
    """
    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return None
    best, run = "", []
    for op, arg in [*parsed, (None, None)]:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best if len(best) >= _MIN_NEEDLE else None


@dataclass(frozen=True, slots=True)
class _Group:
    """All rules that share one (source, pattern), in catalog order."""

    first: int
    regex: re.Pattern[str]
    needle: str | None
    rules: tuple[tuple[int, Rule], ...]
    key: str | None
    """When every rule constrains the same single group, a lookup replaces the rule loop."""
    by_value: Mapping[str, tuple[int, Rule]]

    def first_match(self, line: str) -> tuple[int, Rule, re.Match[str]] | None:
        """The first of this group's rules that ``line`` (known to hold the needle) meets."""
        found = self.regex.search(line)
        if found is None:
            return None
        if self.key is not None:
            hit = self.by_value.get(found.group(self.key) or "")
            return None if hit is None else (*hit, found)
        for index, rule in self.rules:
            if all(found.group(name) in values for name, values in rule.match):
                return index, rule, found
        return None


def _group(rules: list[tuple[int, Rule]]) -> _Group:
    keys = {rule.match[0][0] if len(rule.match) == 1 else None for _, rule in rules}
    key = keys.pop() if len(keys) == 1 else None
    by_value: dict[str, tuple[int, Rule]] = {}
    if key is not None:
        for index, rule in rules:
            for value in rule.match[0][1]:
                by_value.setdefault(value, (index, rule))
    pattern = rules[0][1].pattern
    return _Group(
        first=rules[0][0],
        regex=re.compile(pattern),
        needle=required_literal(pattern),
        rules=tuple(rules),
        key=key,
        by_value=by_value,
    )


def health_text(line: str) -> str | None:
    """The text health rules match: ``"<check> <status> <reason> <device>"``.

    Health results are JSON; matching a canonical text keeps rules independent of key
    order and spacing in the JSON the agent writes.
    """
    try:
        result = json.loads(line)
    except ValueError:
        return None
    if not isinstance(result, dict):
        return None
    try:
        return f"{result['check']} {result['status']} {result['reason']} {result['device']}"
    except KeyError:
        return None


# Printable characters from most to least frequent in kernel logs (counted on the boot
# logs in tests/events/kmsg): a needle enters the prefilter from its rarest character.
_BY_FREQUENCY = " 0e1:n2iro-at.dl3scm4puv8756kN9fb,[]gECMRIh()_AU=PSTV/wDGBOxyXF>z'LqH<@~K#jYQW"
_RARITY = {char: rank for rank, char in enumerate(_BY_FREQUENCY)}
_MIN_ANCHOR = 4


def _anchor(needle: str) -> str:
    """The suffix of ``needle`` (at least _MIN_ANCHOR long, when the needle is) that starts
    with its rarest character: as required as the needle, and a scan for it tries far
    fewer places of a line than one for a needle that starts with a space or an ``e``."""
    needle = needle.strip(" :,.") or needle
    last = max(1, len(needle) - _MIN_ANCHOR + 1)
    start = max(range(last), key=lambda i: (_RARITY.get(needle[i], len(_RARITY)), -i))
    return needle[start:]


def _prefilter(groups: Iterable[_Group]) -> re.Pattern[str] | None:
    """One regex that finds a line holding any group's needle, or None when some group
    has no needle (then every line must be tried group by group).

    The needles' anchors are merged into a trie so that ``re`` follows one branch per
    character, not every needle.
    """
    trie: dict[str, Any] = {}
    for group in groups:
        if group.needle is None:
            return None
        node = trie
        for char in _anchor(group.needle):
            node = node.setdefault(char, {})
        node[""] = {}
    return re.compile(_alternation(trie)) if trie else None


def _alternation(node: dict[str, Any]) -> str:
    if "" in node:  # a needle ends here: a longer one sharing this start adds nothing
        return ""
    branches = [re.escape(char) + _alternation(child) for char, child in sorted(node.items())]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


class Classifier:
    """A catalog compiled for matching; build once, use for every line."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        grouped: dict[tuple[Source, str], list[tuple[int, Rule]]] = {}
        for index, rule in enumerate(catalog.rules):
            grouped.setdefault((rule.source, rule.pattern), []).append((index, rule))
        self._groups: dict[Source, tuple[_Group, ...]] = {
            source: tuple(
                sorted(
                    (_group(rules) for (src, _), rules in grouped.items() if src == source),
                    key=lambda group: group.first,
                )
            )
            for source in ("kmsg", "health")
        }
        self._prefilters = {source: _prefilter(self._groups[source]) for source in self._groups}

    def classify(self, line: str, source: Source = "kmsg") -> Fault | None:
        """The fault of the first rule (in catalog order) that matches ``line``, if any.

        A line whose first matching rule has ``action: ignore`` has no fault.
        """
        text = line if source == "kmsg" else health_text(line)
        if text is None:
            return None
        prefilter = self._prefilters[source]
        if prefilter is not None and prefilter.search(text) is None:
            return None
        best: tuple[int, Rule, re.Match[str]] | None = None
        for group in self._groups[source]:
            if best is not None and group.first > best[0]:
                break
            if group.needle is not None and group.needle not in text:
                continue
            hit = group.first_match(text)
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        if best is None or best[1].action == "ignore":
            return None
        _, rule, found = best
        groups = {name: value for name, value in found.groupdict().items() if value is not None}
        return Fault(rule=rule, line=line, groups=groups)

    def classify_lines(
        self, lines: Iterable[str], source: Source = "kmsg"
    ) -> Iterator[tuple[int, Fault]]:
        """(index, fault) for each line that has one; clean lines yield nothing."""
        classify = self.classify
        for index, line in enumerate(lines):
            fault = classify(line, source)
            if fault is not None:
                yield index, fault


@cache
def default_classifier() -> Classifier:
    """The classifier of the built-in catalog plus NODEMEDIC_CATALOG_EXTRA, built once per
    process (a Lambda container reuses it across invocations)."""
    return Classifier(load_catalog())


def classify(line: str, source: Source = "kmsg") -> Fault | None:
    return default_classifier().classify(line, source)
