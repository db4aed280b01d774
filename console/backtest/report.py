"""A replay → rows per node and fault, fleet totals, and their table and JSON forms.

The JSON form is a public interface (docs/contracts.md, "nodemedic backtest"): keys only
grow. Times are ISO 8601 UTC; an action a monitor-only cluster did not take is ``monitor``,
with the action it ``would`` have taken beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from console.backtest.replay import Replay, Seen, instance_of
from console.backtest.run import Outcome
from nodemedic.remediate.batch import ACTING
from nodemedic.remediate.decision import cap_note

SCHEMA = 1
ACTIONS = (
    "notify",
    "monitor",
    "reboot",
    "replace",
    "held-breaker",
    "held-fleet",
    "duplicate",
    "upgraded",
    "below-threshold",
    "superseded",
)
"""Every ``action`` a row may have, weakest first as the HTML legend lists them."""
TOTALS = (
    "nodes",
    "lines",
    "decisions",
    "notified",
    "monitored",
    "cordoned",
    "rebooted",
    "replaced",
    "held",
    "held_breaker",
    "held_fleet",
    "quarantined",
    "quarantine_refused",
)


def when(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Row:
    node: str
    fault_id: str
    rule_action: str
    lines: int
    first_line: float
    decided: int | None
    action: str
    would: str
    acted: float | None
    cordoned: bool
    escalated: bool
    reason: str
    breaker: tuple[str, ...] = ()
    """Why the breaker held the decision, each time its reason changed."""
    quarantined: int | None = None
    """When the quarantine would have cordoned the node, before the breaker admitted it."""
    quarantine_refused: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "instance_id": instance_of(self.node),
            "fault_id": self.fault_id,
            "rule_action": self.rule_action,
            "lines": self.lines,
            "first_line": when(self.first_line),
            "decided": when(self.decided),
            "action": self.action,
            "would": self.would,
            "acted": when(self.acted),
            "cordoned": self.cordoned,
            "escalated": self.escalated,
            "reason": self.reason,
            "breaker": list(self.breaker),
            "quarantined": when(self.quarantined),
            "quarantine_refused": self.quarantine_refused,
        }


def _row(seen: Seen, outcome: Outcome | None) -> Row:
    if outcome is None:
        silent = "below-threshold" if seen.threshold else "superseded"
        return Row(
            seen.node, seen.fault_id, seen.action, seen.lines, seen.first_at, None,
            silent, "", None, False, False,
            "the rule's threshold was never reached" if silent == "below-threshold"
            else "a stronger fault of the same batch was decided",
        )  # fmt: skip
    return Row(
        seen.node,
        seen.fault_id,
        seen.action,
        seen.lines,
        seen.first_at,
        outcome.decided_at,
        outcome.action,
        outcome.would,
        outcome.acted_at if outcome.acted_at is not None else outcome.decided_at,
        outcome.cordoned_at is not None,
        outcome.escalated,
        _reason(seen, outcome)
        + (f"; held by the breaker first: {outcome.trips[0]}" if _held_first(outcome) else ""),
        tuple(outcome.trips),
        outcome.quarantined_at,
        outcome.quarantine_refused,
    )


def _reason(seen: Seen, outcome: Outcome) -> str:
    """The outcome's reason; for a decision notified though its rule acts, why it was
    capped (injected, previous boot, unproven, stale), as the decision's evidence says."""
    capped = outcome.decision.action == "notify" and seen.action in ACTING
    return cap_note(outcome.decision) if capped else outcome.reason


def _held_first(outcome: Outcome) -> bool:
    return bool(outcome.trips) and outcome.action != "held-breaker"


def rows(replay: Replay) -> list[Row]:
    """A row per decision, and one per fault seen on a node that no decision came of."""
    decided: dict[tuple[str, str], list[Outcome]] = {}
    for node, outcome in replay.outcomes:
        decided.setdefault((node, outcome.decision.fault_id), []).append(outcome)
    none: list[Outcome | None] = [None]
    found = [
        _row(seen, outcome)
        for key, seen in replay.seen.items()
        for outcome in decided.get(key) or none
    ]
    return sorted(found, key=lambda r: (r.node, r.first_line if r.decided is None else r.decided))


def totals(replay: Replay, found: Iterable[Row]) -> dict[str, int]:
    """Fleet totals: what an operator would have seen happen to the fleet."""
    by = Counter(row.action for row in found if row.decided is not None)
    cordoned = sum(1 for _, outcome in replay.outcomes if outcome.cordoned_at is not None)
    return {
        "nodes": len(replay.nodes),
        "lines": replay.lines,
        "decisions": len(replay.outcomes),
        "notified": by["notify"],
        "monitored": by["monitor"],
        "cordoned": cordoned,
        "rebooted": by["reboot"],
        "replaced": by["replace"],
        "held": by["held-breaker"] + by["held-fleet"],
        "held_breaker": by["held-breaker"],
        "held_fleet": by["held-fleet"],
        "quarantined": sum(1 for _, o in replay.outcomes if o.quarantined_at is not None),
        "quarantine_refused": sum(1 for _, o in replay.outcomes if o.quarantine_refused),
    }


def monitor_only(replay: Replay) -> bool:
    """Nothing would have been cordoned: the cluster acts on no node group."""
    settings = replay.settings
    # A listed NodePool or HyperPod cluster is acted on as a group of node_groups is.
    listed = replay.target.substrate in ("karpenter", "hyperpod")
    return (
        (replay.group.name not in settings.node_groups and not listed)
        or settings.recovery_mode == "None"
        or settings.dry_run
    )


def document(replay: Replay) -> dict[str, Any]:
    """The ``--format json`` document."""
    found = rows(replay)
    return {
        "schema": SCHEMA,
        "cluster": replay.settings.name,
        "group": replay.group.name,
        "group_size": replay.group.size,
        "substrate": replay.target.substrate,
        "monitor_only": monitor_only(replay),
        "rows": [row.to_json() for row in found],
        "totals": totals(replay, found),
    }


_COLUMNS = ("NODE", "FAULT", "LINES", "FIRST LINE", "DECIDED", "ACTION", "AT", "WHY")


def table(doc: Mapping[str, Any], out: TextIO) -> None:
    """The document for people: a row per node and fault, then the totals."""
    if doc["monitor_only"]:
        print(
            f"monitor-only: node group {doc['group']} is not one nodemedic acts on "
            "(node_groups, karpenter_nodepools, hyperpod_clusters, recovery_mode, dry_run): "
            "nothing is cordoned, rebooted or replaced; --enforce replays it as an "
            "enforcing cluster",
            file=out,
        )
    if doc["substrate"] in ("karpenter", "hyperpod"):
        print(f"{doc['group']}: repaired through {doc['substrate']}, as it allows", file=out)
    lines = [_COLUMNS] + [
        (
            r["node"], r["fault_id"], str(r["lines"]), r["first_line"], r["decided"] or "-",
            r["action"] + (f" (would {r['would']})" if r["action"] == "monitor" else ""),
            r["acted"] or "-", r["reason"],
        )
        for r in doc["rows"]
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS) - 1)]
    for line in lines:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=False)), line[-1], file=out)
    print(", ".join(f"{name.replace('_', ' ')} {doc['totals'][name]}" for name in TOTALS), file=out)
