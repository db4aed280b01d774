"""Hardware errors in a job's own output, as evidence about its node.

The Neuron runtime reports a broken device (an uncorrectable memory error, a DMA engine in
abort, a compute hang) on the job's stdout, where only the job monitor reads it; the agent
sees the driver's ``NEURON_HW_ERR=`` kernel line only where the driver prints one. The
collective libraries (NCCL, aws-ofi-nccl, UCX, Open MPI) report the fabric under the job
the same way: a work request that exhausted its retries, a peer that stopped answering, a
device marked failed; the kernel logs nothing of a link that drops packets. The rules are
built in, one file per family beside this module (``CATALOGS``), each with its source and
the source's recommended action.

A job writes its own output: any tenant can print these lines. So a match is never proof,
and its decision is capped below anything that takes a node's work away: ``notify``, or
``deep-check`` where AWS says the hardware is bad (docs/jobs.md). The node's own evidence,
its kernel lines and health checks proved by its own key, is what reboots or replaces it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final, Literal, Protocol, get_args

import re2
import yaml

NodeAction = Literal["notify", "deep-check"]
"""From the weaker to the stronger. Nothing stronger exists on purpose: a line the tenant
may have written must not reboot, drain or replace a node."""
NODE_ACTIONS: Final[tuple[NodeAction, ...]] = get_args(NodeAction)
CATALOGS: Final = ("neuron_runtime.yaml", "fabric.yaml")
"""The built-in files, the family whose rules ask for a deep check first: ``matched`` takes
the first rule that matches."""
FIELDS: Final = frozenset({"id", "pattern", "action", "advice", "summary", "source", "example"})


class Found(Protocol):
    def start(self) -> int: ...


class Searching(Protocol):
    """What a rule uses of a compiled RE2 pattern: ``search``, anywhere in the line, and
    ``finditer`` over a delivery's lines joined (``strongest``)."""

    def search(self, text: str, /) -> Found | None: ...

    def finditer(self, text: str, /) -> Iterator[Found]: ...


class HardwareCatalogError(ValueError):
    """The built-in file is wrong: a packaging or editing mistake, named precisely."""


@dataclass(frozen=True)
class HardwareRule:
    id: str
    expression: str
    pattern: Searching
    action: NodeAction
    advice: str
    """The source's recommended action (AWS's for the Neuron runtime), for the people told."""
    summary: str
    source: str
    example: str


@dataclass(frozen=True)
class Finding:
    """The strongest rule a pod's lines matched, with the first line that matched it."""

    rule: HardwareRule
    line: str
    at: float


def parse(document: object, name: str) -> tuple[HardwareRule, ...]:
    """The rules of catalog document ``name``; every field checked, every example matched
    by its own rule (a pattern that misses its own example would never fire)."""
    if not isinstance(document, Mapping) or document.get("schema") != 1:
        raise HardwareCatalogError(f"{name}: expected a mapping with schema: 1")
    raw_rules = document.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise HardwareCatalogError(f"{name}: rules must be a non-empty list")
    return tuple(_rule(raw, name) for raw in raw_rules)


def _rule(raw: object, name: str) -> HardwareRule:
    if not isinstance(raw, Mapping) or set(raw) != FIELDS:
        raise HardwareCatalogError(f"{name}: each rule has exactly {sorted(FIELDS)}: {raw!r}")
    texts = {key: raw[key] for key in FIELDS}
    if not all(isinstance(value, str) and value for value in texts.values()):
        raise HardwareCatalogError(f"{name}: {raw.get('id')!r}: every field is a text")
    action = texts["action"]
    if action not in NODE_ACTIONS:
        raise HardwareCatalogError(
            f"{name}: {texts['id']!r}: action must be one of {NODE_ACTIONS}, got {action!r}"
        )
    try:
        pattern: Searching = re2.compile(texts["pattern"])
    except re2.error as exc:
        raise HardwareCatalogError(f"{name}: {texts['id']!r}: {exc}") from exc
    rule = HardwareRule(
        id=texts["id"],
        expression=texts["pattern"],
        pattern=pattern,
        action=NODE_ACTIONS[NODE_ACTIONS.index(action)],
        advice=texts["advice"],
        summary=texts["summary"],
        source=texts["source"],
        example=texts["example"],
    )
    if pattern.search(rule.example) is None:
        raise HardwareCatalogError(f"{name}: {rule.id!r}: its pattern misses its example")
    return rule


def merged(families: Iterable[tuple[HardwareRule, ...]]) -> tuple[HardwareRule, ...]:
    """The families' rules in order; an id two rules share is refused (it names an Event
    and a ledger key)."""
    rules = tuple(rule for family in families for rule in family)
    ids = Counter(rule.id for rule in rules)
    if shared := sorted(rule_id for rule_id, count in ids.items() if count > 1):
        raise HardwareCatalogError(f"rule ids must be unique; more than one rule has {shared}")
    return rules


def load(name: str) -> tuple[HardwareRule, ...]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return parse(yaml.safe_load(text), name)


@cache
def rules() -> tuple[HardwareRule, ...]:
    return merged(load(name) for name in CATALOGS)


@cache
def _any_rule() -> Searching:
    """Every rule's pattern in one: the patterns hold no newline, so a match in a delivery's
    lines joined by newlines lies within one line."""
    compiled: Searching = re2.compile("|".join(f"(?:{rule.expression})" for rule in rules()))
    return compiled


def matched(line: str) -> HardwareRule | None:
    """The first rule whose pattern occurs in ``line`` (the file lists the stronger first)."""
    for rule in rules():
        if rule.pattern.search(line) is not None:
            return rule
    return None


def strongest(lines: Iterable[tuple[float, str]]) -> Finding | None:
    """What a pod's lines say of its node: the strongest action's first line, or None. One
    finding per pod and delivery: a failing runtime repeats its error on every rank.

    Every line of every job passes here, so the lines are searched joined, in one call of
    one pattern (0.7 µs a line, where a call per rule and line cost 110 µs: the binding's
    cost is per call); only a line that matched is matched again rule by rule."""
    ordered = list(lines)
    text = "\n".join(line for _, line in ordered)
    hits = list(_any_rule().finditer(text))  # every line RE2-encodable: records._encodable
    starts: list[int] = []
    found: Finding | None = None
    for hit in hits:
        if not starts:
            starts = _line_starts(ordered)
        index = bisect_right(starts, hit.start()) - 1
        at, line = ordered[index][0], text[starts[index] : starts[index] + len(ordered[index][1])]
        rule = matched(line)
        if rule is None:
            continue
        if found is None or NODE_ACTIONS.index(rule.action) > NODE_ACTIONS.index(found.rule.action):
            found = Finding(rule, line, at)
    return found


def _line_starts(lines: list[tuple[float, str]]) -> list[int]:
    """Where each line begins in the lines joined by newlines."""
    starts, offset = [], 0
    for _, line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts
