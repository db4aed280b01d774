"""The fault catalog: rules as data, loaded from ``rules/<family>.yaml`` and the user's files.

Nothing else in nodemedic names a fault. The classifier, the subscription filter pattern,
the metric names, the alarms and the dashboard are all derived from the rules loaded here,
so a user adds a fault in one place (like node-problem-detector's rule files).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast, get_args, get_origin, get_type_hints

import yaml

from nodemedic.contracts.env import ENV_CATALOG_EXTRA
from nodemedic.contracts.kube import (
    CONDITION_ACCELERATED,
    CONDITION_KERNEL,
    CONDITION_NEURON,
    CONDITION_STORAGE,
)
from nodemedic.contracts.metrics import METRICS_NAMESPACE

Source = Literal["kmsg", "health", "deep-check", "hyperpod"]
"""``deep-check`` rules match health result text too, but only on the deep check's stream.
``hyperpod`` rules match SageMaker HyperPod's own events (``nodemedic.detect.hyperpod``):
``contracts.substrates.HYPERPOD_SOURCE``."""
Component = Literal["gpu", "neuron", "efa", "memory", "cpu", "storage", "kernel"]
Severity = Literal["info", "warning", "critical", "fatal"]
Action = Literal["ignore", "notify", "reset", "reboot", "replace"]
"""From the weakest to the strongest: a batch that calls for several starts the last one.
``reset`` (the GPU in place) is a reboot wherever the cluster's ``gpu_reset`` is off
(``acted``)."""


def acted(action: Action, *, gpu_reset: bool) -> Action:
    """``action`` as a cluster acts on it: a GPU reset is a reboot unless the cluster's
    ``gpu_reset`` is on, so that with the default every fault acts as it always did."""
    return "reboot" if action == "reset" and not gpu_reset else action


ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
METRIC_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_DEFAULT_CONDITION: dict[str, str] = {
    "neuron": CONDITION_NEURON,
    "gpu": CONDITION_ACCELERATED,
    "efa": CONDITION_ACCELERATED,
    "storage": CONDITION_STORAGE,
    "memory": CONDITION_KERNEL,
    "cpu": CONDITION_KERNEL,
    "kernel": CONDITION_KERNEL,
}
FAMILIES = (
    "xid",
    "nvidia",
    "nvlink",
    "neuron",
    "efa",
    "network",
    "pcie",
    "kernel",
    "storage",
    "health",
    "deepcheck",
    "hyperpod",
)
"""The built-in rule files, ``rules/<family>.yaml``, in the order they are merged.

The first matching rule wins, so this order decides a line that rules of two families
match. No line under tests/events/kmsg and no rule's example is matched by two families
today; the order is still the one that keeps the more specific verdict first: the code
NVIDIA's driver gives (``xid``, generated) before the driver's other messages about the
same GPU (an Xid 79 line also says "GPU has fallen off the bus") and the NVSwitches,
accelerators before the generic memory, CPU, kernel and storage lines a failing accelerator
also causes, and agent health results (another text, ``source: health``) and the deep
check's verdicts (``source: deep-check``, its own stream), then SageMaker HyperPod's own
findings (``source: hyperpod``, its own log group) last.
"""
FIELDS = {
    "id",
    "source",
    "pattern",
    "match",
    "component",
    "severity",
    "action",
    "threshold",
    "term",
    "condition",
    "metric",
    "namespace",
    "summary",
    "example",
}


class CatalogError(ValueError):
    """A rule file that cannot be used; the message names the file and the rule."""


@dataclass(frozen=True)
class Threshold:
    """Act on the ``count``-th hit of a rule on one node within ``window`` seconds."""

    count: int
    window: int


@dataclass(frozen=True)
class Rule:
    id: str
    source: Source
    pattern: str
    component: Component
    severity: Severity
    action: Action
    condition: str
    metric: str
    namespace: str
    summary: str
    example: str
    match: tuple[tuple[str, frozenset[str]], ...] = ()
    threshold: Threshold | None = None
    term: str = ""
    """The literal the subscription filter selects the rule's lines by, where the pattern's
    longest one is not the best choice: a shorter one many rules share (``NVRM``), so the
    filter's few characters go further. Empty: the longest (``detect.filterpattern``)."""

    @property
    def condition_status(self) -> str:
        return faulty_status(self.condition)


def faulty_status(condition: str) -> str:
    """Status of a node condition while the fault holds: ``*Ready`` conditions turn False,
    any other (``NeuronHasError``) turns True, as Kubernetes and the Neuron tooling use them."""
    return "False" if condition.endswith("Ready") else "True"


def healthy_status(condition: str) -> str:
    return "True" if faulty_status(condition) == "False" else "False"


@dataclass(frozen=True)
class Catalog:
    rules: tuple[Rule, ...]
    user: frozenset[str] = frozenset()
    """The ids of the rules from the user's files: each pattern is one RE2 runs
    (``linear_error``), and the classifier matches it with RE2. The shipped rules are
    reviewed and tested with the catalog, and matched with ``re``, several times faster."""

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def metrics(self) -> list[tuple[str, str]]:
        """Distinct (namespace, metric) pairs of the rules that can raise a fault."""
        seen: dict[tuple[str, str], None] = {}
        for rule in self.rules:
            if rule.action != "ignore":
                seen.setdefault((rule.namespace, rule.metric))
        return list(seen)


REQUIRED = ("id", "source", "pattern", "component", "severity", "action", "metric")
CHOICES: dict[str, tuple[str, ...]] = {
    name: get_args(hint)
    for name, hint in get_type_hints(Rule).items()
    if get_origin(hint) is Literal
}
"""Field → the values it may take, for the fields typed with a ``Literal``."""


def _threshold(raw: object) -> Threshold | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) != {"count", "window"}:
        raise ValueError("threshold must be {count: N, window: SECONDS}")
    count, window = raw["count"], raw["window"]
    if not (isinstance(count, int) and isinstance(window, int) and count >= 1 and window >= 1):
        raise ValueError("threshold count and window must be positive integers")
    return Threshold(count=count, window=window)


def _match(raw: object, compiled: re.Pattern[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError("match must map named groups to lists of values")
    pairs = []
    for group, values in raw.items():
        if group not in compiled.groupindex:
            raise ValueError(f"match names group {group!r}, which the pattern does not have")
        if not isinstance(values, list) or not values:
            raise ValueError(f"match.{group} must be a non-empty list")
        pairs.append((str(group), frozenset(str(v) for v in values)))
    return tuple(sorted(pairs))


_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: the catalog is read at every cold start and
every ``nodemedic`` command, and the pure-Python parser takes half a second on it."""


def linear_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be matched in time linear in the line; None when it can.

    A rule's pattern runs on every kernel line of every node. Python's ``re`` backtracks:
    ``^pcieport (\\w+\\s?)+$`` takes longer than a Lambda's timeout on one 80-character
    line, stalling every fault in the batch with it. RE2 matches in time linear in the
    line whatever the pattern, and refuses what it cannot match that way (a backreference,
    a lookaround), which is the reason given.
    """
    # Imported here: only a user's rule needs it, and the node agent's image, which reads
    # the built-in catalog alone, does not ship RE2.
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


def rule_errors(raw: Mapping[str, Any], *, builtin: bool = False) -> list[str]:
    """Every mistake in one rule, so a file is mended in one go, not one error a run. A
    rule that is not ``builtin`` must have a pattern RE2 can match (``linear_error``)."""
    errors = []
    unknown = set(raw) - FIELDS
    if unknown:
        errors.append(f"unknown field(s): {', '.join(sorted(unknown))}")
    missing = {key for key in REQUIRED if not raw.get(key)}
    errors += [f"missing field {key!r}" for key in REQUIRED if key in missing]
    if "id" not in missing and not ID_PATTERN.match(str(raw["id"])):
        errors.append(f"id {str(raw['id'])!r} must be lower-case kebab-case")
    compiled = None
    if "pattern" not in missing:
        try:
            compiled = re.compile(str(raw["pattern"]))
        except re.error as exc:
            errors.append(f"pattern does not compile: {exc}")
    why = None if compiled is None or builtin else linear_error(str(raw["pattern"]))
    if why is not None:
        errors.append(
            f"pattern cannot be matched in linear time (RE2: {why}): write it without "
            "backreferences or lookarounds"
        )
    for key, allowed in CHOICES.items():
        if key not in missing and raw[key] not in allowed:
            errors.append(f"{key} must be one of {', '.join(allowed)}, not {raw[key]!r}")
    if "metric" not in missing and not METRIC_PATTERN.match(str(raw["metric"])):
        errors.append(f"metric {str(raw['metric'])!r} is not a valid CloudWatch metric name")
    try:
        _threshold(raw.get("threshold"))
    except ValueError as exc:
        errors.append(str(exc))
    if compiled is not None:
        try:
            _match(raw.get("match"), compiled)
        except ValueError as exc:
            errors.append(str(exc))
    return errors


def parse_rule(raw: Mapping[str, Any], *, builtin: bool = False) -> Rule:
    """Validate one rule, so a typo fails at load time instead of silently never matching;
    the ValueError names every mistake, separated by "; "."""
    errors = rule_errors(raw, builtin=builtin)
    if errors:
        raise ValueError("; ".join(errors))
    pattern = str(raw["pattern"])
    component = cast(Component, raw["component"])
    return Rule(
        id=str(raw["id"]),
        source=cast(Source, raw["source"]),
        pattern=pattern,
        match=_match(raw.get("match"), re.compile(pattern)),
        component=component,
        severity=cast(Severity, raw["severity"]),
        action=cast(Action, raw["action"]),
        threshold=_threshold(raw.get("threshold")),
        term=str(raw.get("term") or ""),
        condition=str(raw.get("condition") or _DEFAULT_CONDITION[component]),
        metric=str(raw["metric"]),
        namespace=str(raw.get("namespace") or METRICS_NAMESPACE),
        summary=str(raw.get("summary") or ""),
        example=str(raw.get("example") or ""),
    )


def parse_rules(text: str, origin: str, *, builtin: bool = False) -> list[Rule]:
    """The rules of one file; CatalogError naming every mistake of every rule, one line
    each (``<origin>: rule <id>: <mistake>``)."""
    try:
        document = yaml.load(text, Loader=_YAML)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(document, Mapping) or not isinstance(document.get("rules"), list):
        raise CatalogError(f"{origin}: expected a mapping with a 'rules' list")
    if document.get("schema", 1) != 1:
        raise CatalogError(f"{origin}: unsupported schema {document.get('schema')!r}")
    rules, errors, seen = [], [], set()
    for index, raw in enumerate(document["rules"]):
        label = raw.get("id", f"#{index}") if isinstance(raw, Mapping) else f"#{index}"
        if not isinstance(raw, Mapping):
            errors.append(f"{origin}: rule {label}: expected a mapping")
            continue
        # Said with the other mistakes, not after they are fixed.
        if "id" in raw and label in seen:
            errors.append(f"{origin}: rule {label}: id used twice in this file")
        seen.add(label)
        mistakes = rule_errors(raw, builtin=builtin)
        errors += [f"{origin}: rule {label}: {mistake}" for mistake in mistakes]
        if not mistakes:
            rules.append(parse_rule(raw, builtin=builtin))
    if errors:
        raise CatalogError("\n".join(errors))
    return rules


def merge(base: Sequence[Rule], extra: Iterable[Rule]) -> tuple[Rule, ...]:
    """Put the user's rules first (first match wins, so they can shadow a built-in line)
    and let a user rule with a built-in id replace that rule."""
    extra = list(extra)
    ids = [rule.id for rule in extra]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise CatalogError(
            f"duplicate rule id(s) in extra catalogs: {', '.join(sorted(duplicated))}"
        )
    replaced = set(ids)
    return (*extra, *(rule for rule in base if rule.id not in replaced))


def merge_families(files: Iterable[tuple[str, str]]) -> tuple[Rule, ...]:
    """The built-in rules of ``(origin, text)`` files, one after the other; an id must be
    used once."""
    rules: list[Rule] = []
    origins: dict[str, str] = {}
    for origin, text in files:
        for rule in parse_rules(text, origin, builtin=True):
            if rule.id in origins:
                raise CatalogError(
                    f"{origin}: rule {rule.id}: id already used in {origins[rule.id]}"
                )
            origins[rule.id] = origin
            rules.append(rule)
    return tuple(rules)


def builtin_rules() -> tuple[Rule, ...]:
    """The shipped rules: every family's file, in :data:`FAMILIES` order."""
    folder = resources.files(__name__).joinpath("rules")
    return merge_families(
        (f"rules/{family}.yaml", folder.joinpath(f"{family}.yaml").read_text(encoding="utf-8"))
        for family in FAMILIES
    )


def extra_paths_from_env() -> list[Path]:
    value = os.environ.get(ENV_CATALOG_EXTRA, "")
    return [Path(part) for part in value.split(os.pathsep) if part]


def load_catalog(extra: Sequence[Path] = ()) -> Catalog:
    """The built-in rules plus ``extra`` files plus those named in NODEMEDIC_CATALOG_EXTRA."""
    user: list[Rule] = []
    errors = []
    for path in [*extra, *extra_paths_from_env()]:
        try:
            user.extend(parse_rules(path.read_text(encoding="utf-8"), str(path)))
        except OSError as exc:
            errors.append(f"{path}: cannot read catalog: {exc.strerror}")
        except CatalogError as exc:
            errors.append(str(exc))  # every file's mistakes at once
    if errors:
        raise CatalogError("\n".join(errors))
    return Catalog(rules=merge(builtin_rules(), user), user=frozenset(r.id for r in user))
