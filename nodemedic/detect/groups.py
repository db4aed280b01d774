"""The rules of a catalog as the classifier tries them: grouped by pattern, each group with
the needle a line must hold and the first characters a match must start with.

Rules that share a pattern are evaluated by one search followed by a table lookup on the
captured value (every Xid is one search, not 150); a group is tried only on a line that
holds its needle (``matching.required_literal``) or starts as its matches do
(``matching.prefixes``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import contains, not_

import ahocorasick

from nodemedic.catalog import Rule
from nodemedic.detect.matching import (
    Found,
    Searcher,
    compiled,
    matches_any,
    prefixes,
    required_literal,
)


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """All rules that share one (source, pattern), in catalog order."""

    first: int
    regex: Searcher
    needle: str | None
    rules: tuple[tuple[int, Rule, tuple[str, ...], tuple[frozenset[str], ...]], ...]
    """Each rule (with its catalog index) and what it asks of a match: the groups it
    constrains and the values each may take, tested by ``map`` at C speed."""
    key: str | None
    """When every rule constrains the same single group, a lookup replaces the rule loop."""
    by_value: Mapping[str, tuple[int, Rule]]
    starts: frozenset[str] | None = None
    """The first characters every match starts with (``matching.prefixes``), if known."""
    fallback: tuple[int, Rule] | None = None
    """With a lookup, the first rule that constrains nothing (a catch-all after the others:
    the codes no rule names), met where the lookup finds no rule."""

    def first_match(self, line: str) -> tuple[int, Rule, Found] | None:
        """The first of this group's rules that ``line`` meets; the caller has seen the
        needle in it (``classifier._first_fault``)."""
        found = self.regex.search(line)
        if found is None:
            return None
        if self.key is not None:
            hit = self.by_value.get(found.group(self.key) or "", self.fallback)
            return None if hit is None else (*hit, found)
        for index, rule, names, values in self.rules:
            if not names or all(map(contains, values, map(found.group, names))):
                return index, rule, found
        return None


def group_of(rules: list[tuple[int, Rule]], user: frozenset[str]) -> Group:
    """The rules of one pattern; those after the first that constrains nothing can never
    win, so only the ones before it need the same single group for a lookup."""
    plain = next((n for n, (_, rule) in enumerate(rules) if not rule.match), len(rules))
    keys = {rule.match[0][0] if len(rule.match) == 1 else None for _, rule in rules[:plain]}
    key = keys.pop() if len(keys) == 1 else None
    by_value: dict[str, tuple[int, Rule]] = {}
    if key is not None:
        for index, rule in rules[:plain]:
            for value in rule.match[0][1]:
                by_value.setdefault(value, (index, rule))
    pattern = rules[0][1].pattern
    return Group(
        first=rules[0][0],
        regex=compiled(pattern, linear=any(rule.id in user for _, rule in rules)),
        needle=required_literal(pattern),
        starts=prefixes(pattern),
        rules=tuple(
            (index, rule, tuple(n for n, _ in rule.match), tuple(v for _, v in rule.match))
            for index, rule in rules
        ),
        key=key,
        by_value=by_value,
        fallback=rules[plain] if key is not None and plain < len(rules) else None,
    )


def scan_needles(groups: Sequence[Group]) -> dict[str, tuple[Group, ...]]:
    """Each needle a line is searched for, with the groups (in catalog order) that a line
    holding it may match. A needle that holds another needle is not searched for: its
    groups go with the shorter one, which every line that holds the longer one holds."""
    of = {group: group.needle for group in groups}
    needles = {needle for needle in of.values() if needle is not None}
    scanned = [n for n in needles if not any(o != n and o in n for o in needles)]
    return {
        needle: tuple(g for g in groups if (own := of[g]) is not None and needle in own)
        for needle in sorted(scanned)
    }


def needle_search(needles: Iterable[str]) -> Callable[[str], bool]:
    """Whether a line holds any of ``needles``, in one pass over it (an Aho-Corasick
    automaton) however many the catalog has: a ``str.find`` per needle over each chunk
    cost triage two thirds of its time on a boot log."""
    words = list(needles)
    if not words:
        return lambda line: False
    automaton = ahocorasick.Automaton(ahocorasick.STORE_LENGTH)
    for word in words:
        automaton.add_word(word)
    automaton.make_automaton()
    search = automaton.iter
    return lambda line: next(search(line), None) is not None


@dataclass(frozen=True, slots=True, eq=False)
class Start:
    """The groups whose matches start with one prefix, in catalog order. Most lines that
    start so are a driver's ordinary chatter ("nvidia-nvswitch0: ...", "nvme nvme0: ..."):
    a line reaches the groups only where it holds one of their ``needles`` (tested on the
    lines that start so, each until it holds one: a fraction of what trying the groups'
    rules costs) and, of those, where they are few in their chunk (a boot log's, not a
    storm's), only where ``matches`` (one call at C speed) says one of the groups' patterns
    matches it: a boot log's chatter holds needles too ("nvme nvme0: pci function ...",
    "EDAC MC: Ver: 3.0.0")."""

    groups: tuple[Group, ...]
    needles: tuple[str, ...] | None
    """What a line must hold one of to reach the groups (``scan_needles``); None where a
    group has none."""
    matches: Callable[[str], object] | None
    """Truthy for a text that one of the groups' patterns matches (``matching.matches_any``);
    None where they cannot be run as one."""

    def holding(self, numbers: list[int], texts: Sequence[str]) -> list[int]:
        """Those of ``numbers`` whose texts hold one of the needles (all of them where there
        are none), each text tested until it holds one."""
        if self.needles is None:
            return numbers
        reached: list[int] = []
        rest = numbers
        for needle in self.needles:
            held = [needle in texts[n] for n in rest]
            if any(held):
                reached += compress(rest, held)
                rest = list(compress(rest, map(not_, held)))
            if not rest:
                break
        return reached


def start_of(groups: Sequence[Group]) -> Start:
    """The groups of one prefix, with what a line must hold and match to reach them."""
    needles = None if any(g.needle is None for g in groups) else tuple(scan_needles(groups))
    return Start(tuple(groups), needles, matches_any([group.regex for group in groups]))


def catalog_order(group: Group) -> int:
    return group.first
