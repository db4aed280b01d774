"""A job's log monitoring rules, read from its annotation in HyperPod's field names.

Users bring manifests they already have: the rules are HyperPod's
``logMonitoringConfiguration`` list, in YAML or JSON. Every rule is checked whole before any
is used, and a bad one is an error naming the rule and the field, which the job monitor
turns into a Kubernetes Event on the job: a typo must never silently disable monitoring.

Patterns are RE2's, not ``re``'s: a user's pattern runs on every line of the job, and one
that backtracks (``(\\w+\\s?)+$`` took 9.4 s on one 41-character line with ``re``) would
stall every delivery. RE2 matches in time linear in the line; what it cannot run that way
(a backreference, a lookaround) is an invalid rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args

import re2
import yaml

Operator = Literal["gt", "gteq", "lt", "lteq", "eq"]
OPERATORS: Final[tuple[Operator, ...]] = get_args(Operator)
FIELDS: Final = (
    "name",
    "logPattern",
    "expectedStartCutOffInSeconds",
    "expectedRecurringFrequencyInSeconds",
    "metricThreshold",
    "operator",
    "metricEvaluationDataPoints",
    "stopPattern",
    "faultOnMatch",
)
MAX_RULES: Final = 50
"""Every rule runs on every line of the job: a bound keeps a delivery's cost bounded."""


class Match(Protocol):
    def group(self, index: int, /) -> str | None: ...


class Pattern(Protocol):
    """What a rule uses of a compiled pattern (RE2's ``_Regexp``): ``match`` anchors at the
    line's start, as HyperPod's ``re.match`` does."""

    @property
    def groups(self) -> int: ...

    def match(self, text: str, /) -> Match | None: ...


class RuleError(ValueError):
    """The job's log monitoring configuration is not valid; the message says where."""


@dataclass(frozen=True)
class Rule:
    name: str
    log_pattern: Pattern
    start_cutoff: float | None = None
    recurring_frequency: float | None = None
    metric_threshold: float | None = None
    operator: Operator | None = None
    data_points: int = 1
    stop_pattern: Pattern | None = None
    fault_on_match: bool = False

    @property
    def has_metric(self) -> bool:
        return self.metric_threshold is not None


def load_document(text: str, what: str) -> object:
    """YAML (of which JSON is a subset) from an annotation's value."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RuleError(f"{what} is neither YAML nor JSON: {exc}") from exc


def parse_rules(text: str) -> tuple[Rule, ...]:
    """The rules of an annotation holding a list of rules, or a mapping with the list under
    ``logMonitoringConfiguration`` (a HyperPod ``runPolicy`` pasted whole)."""
    document = load_document(text, "logMonitoringConfiguration")
    if isinstance(document, Mapping) and "logMonitoringConfiguration" in document:
        document = document["logMonitoringConfiguration"]
    return rules_of(document)


def rules_of(document: object) -> tuple[Rule, ...]:
    if not isinstance(document, list) or not document:
        raise RuleError("logMonitoringConfiguration must be a non-empty list of rules")
    if len(document) > MAX_RULES:
        raise RuleError(
            f"logMonitoringConfiguration has {len(document)} rules, at most {MAX_RULES}"
        )
    rules = tuple(_rule(raw, index) for index, raw in enumerate(document))
    names = [rule.name for rule in rules]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise RuleError(f"rule names must be unique: {', '.join(twice)} appear twice")
    return rules


def _rule(raw: object, index: int) -> Rule:
    where = f"rule {index + 1}"
    if not isinstance(raw, Mapping):
        raise RuleError(f"{where} must be a mapping of HyperPod's fields, got {raw!r}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RuleError(f"{where}: name must be a non-empty string, got {name!r}")
    where = f"rule {name!r}"
    check_known(raw, FIELDS, where)
    pattern = _pattern(raw, "logPattern", where, required=True)
    assert pattern is not None
    threshold = _number(raw, "metricThreshold", where, positive=False)
    operator = raw.get("operator")
    if operator is not None and operator not in OPERATORS:
        raise RuleError(
            f"{where}: operator must be one of {', '.join(OPERATORS)}, got {operator!r}"
        )
    if (threshold is None) != (operator is None):
        raise RuleError(f"{where}: metricThreshold and operator go together; give both or neither")
    if threshold is not None and pattern.groups < 1:
        raise RuleError(
            f"{where}: metricThreshold needs a capture group in logPattern for the value"
        )
    points = raw.get("metricEvaluationDataPoints", 1)
    if type(points) is not int or points < 1:
        raise RuleError(
            f"{where}: metricEvaluationDataPoints must be an integer >= 1, got {points!r}"
        )
    fault = raw.get("faultOnMatch", False)
    if type(fault) is not bool:
        raise RuleError(f"{where}: faultOnMatch must be true or false, got {fault!r}")
    return Rule(
        name=name,
        log_pattern=pattern,
        start_cutoff=_number(raw, "expectedStartCutOffInSeconds", where, positive=True),
        recurring_frequency=_number(
            raw, "expectedRecurringFrequencyInSeconds", where, positive=True
        ),
        metric_threshold=threshold,
        operator=operator,
        data_points=points,
        stop_pattern=_pattern(raw, "stopPattern", where, required=False),
        fault_on_match=fault,
    )


def check_known(raw: Mapping[object, object], fields: Sequence[str], where: str) -> None:
    """A misspelt field is an error: silently ignored, it would disable what it names."""
    unknown = sorted(str(key) for key in raw if key not in fields)
    if unknown:
        raise RuleError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(fields)}"
        )


def _pattern(raw: Mapping[str, object], key: str, where: str, *, required: bool) -> Pattern | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise RuleError(f"{where}: {key} must be a non-empty regular expression, got {value!r}")
    try:
        compiled: Pattern = re2.compile(value)
    except re2.error as exc:
        raise RuleError(
            f"{where}: {key} {value!r} is not a regular expression RE2 runs in linear time"
            f" (no backreferences or lookarounds): {exc}"
        ) from exc
    return compiled


def _number(raw: Mapping[str, object], key: str, where: str, *, positive: bool) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RuleError(f"{where}: {key} must be a number, got {value!r}")
    if positive and value <= 0:
        raise RuleError(f"{where}: {key} must be greater than 0, got {value!r}")
    return float(value)
