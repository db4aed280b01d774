"""The checks a cluster's settings run on their own values (``ClusterSettings`` calls them
when made), each mistake reported, and the limits they check against."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nodemedic import group_settings

if TYPE_CHECKING:
    from nodemedic.settings import ClusterSettings

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")
EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
EMAIL = re.compile(r"^[^@\s\"'<>,;]+@[^@\s\"'<>,;]+\.[A-Za-z]{2,}$")
IAM_WILDCARDS = ("*", "?")
MAX_GROUP_NAME = 255
MAX_SPARES = 100
"""More idle accelerators than this per group is a capacity plan, not a spare pool."""
# fmt: off
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731,
    1096, 1827, 2192, 2557, 2922, 3288, 3653,
)
# fmt: on
"""The values CloudWatch Logs accepts for a log group's RetentionInDays."""


def _spares_errors(settings: ClusterSettings) -> list[str]:
    """A spare of a group nodemedic does not act on would never be used, only paid for."""
    errors = []
    groups = [group for group, _ in settings.spares]
    if len(set(groups)) != len(groups):
        errors.append("spares names a group twice")
    for group, count in settings.spares:
        if group not in settings.node_groups:
            errors.append(f"spares: {group!r} is not in node_groups")
        if not 0 <= count <= MAX_SPARES:
            errors.append(f"spares: {group!r} must keep 0 to {MAX_SPARES}, not {count}")
    return errors


def _planned_errors(settings: ClusterSettings) -> list[str]:
    """A Spot group nodemedic does not act on would be listed for nothing."""
    errors = [
        f"spot_groups: {group!r} is not in node_groups"
        for group in settings.spot_groups
        if group not in settings.node_groups
    ]
    if settings.planned_lead_time < 0:
        errors.append("planned_lead_time must be 0 or more")
    return errors


def _auto_repair_errors(settings: ClusterSettings) -> list[str]:
    """EKS node auto repair and nodemedic would both reboot or replace the same nodes, each
    undoing or doubling the other's work."""
    if settings.eks_auto_repair != "on" or not settings.node_groups:
        return []
    return [
        "eks_auto_repair is on: EKS node auto repair and nodemedic would both act on the "
        f"nodes of {', '.join(map(repr, settings.node_groups))}; turn node auto repair off "
        "for those managed node groups and set eks_auto_repair to off, or leave them out "
        "of node_groups"
    ]


def _node_group_errors(groups: Sequence[str]) -> list[str]:
    """The names go into IAM ARNs, where ``*`` and ``?`` would widen what may be replaced."""
    errors = []
    for group in groups:
        if not 1 <= len(group) <= MAX_GROUP_NAME:
            errors.append(f"node group name {group!r} must have 1 to {MAX_GROUP_NAME} characters")
        if any(wildcard in group for wildcard in IAM_WILDCARDS):
            errors.append(f"node group name {group!r}: wildcards are not allowed")
    if len(set(groups)) != len(groups):
        errors.append("node_groups lists a group twice")
    return errors


def value_errors(settings: ClusterSettings, choices: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every mistake in the values of ``settings``; ``choices``: setting → the values it
    may take, for those typed with a ``Literal``."""
    errors = []
    if not NAME.match(settings.name):
        errors.append(f"cluster name {settings.name!r} must match {NAME.pattern}")
    if settings.eks_cluster_name and not EKS_NAME.match(settings.eks_cluster_name):
        errors.append(
            f"eks_cluster_name {settings.eks_cluster_name!r} is not an EKS cluster name "
            f"({EKS_NAME.pattern})"
        )
    for key, allowed in choices.items():
        if getattr(settings, key) not in allowed:
            errors.append(f"{key} must be {' or '.join(allowed)}, not {getattr(settings, key)!r}")
    errors += _number_errors(settings)
    errors += _node_group_errors(settings.node_groups)
    errors += _spares_errors(settings)
    errors += _planned_errors(settings)
    errors += _auto_repair_errors(settings)
    errors += group_settings.action_errors(settings.actions)
    errors += [
        f"notification_emails: {address!r} is not an e-mail address"
        for address in settings.notification_emails
        if not EMAIL.match(address)
    ]
    return errors


AT_LEAST_ONE = (
    "max_parallel",
    "drain_timeout",
    "reboot_timeout",
    "escalation_window",
    "stale_after",
    "breaker_hold",
    "poll_seconds",
    "max_in_flight",
    "reboots_per_hour",
    "reboots_per_day",
    "replacements_per_hour",
    "replacements_per_day",
    "breaker_cooldown",
    "history_days",
    "deep_check_timeout",
    "job_restarts_per_window",
    "job_cluster_restarts_per_window",
    "job_restart_window",
    "job_breaker_cooldown",
    "job_log_silence",
    "approval_timeout",
)
"""Settings whose value is at least 1."""


def _number_errors(settings: ClusterSettings) -> list[str]:
    errors = []
    if not 0 <= settings.max_unhealthy_percent <= 100:
        errors.append("max_unhealthy_percent must be within 0..100")
    errors += [f"{key} must be at least 1" for key in AT_LEAST_ONE if getattr(settings, key) < 1]
    for action in ("reboots", "replacements"):
        if getattr(settings, f"{action}_per_day") < getattr(settings, f"{action}_per_hour"):
            errors.append(f"{action}_per_day must be at least {action}_per_hour")
    try:
        settings.fleet_rules  # noqa: B018 (FleetRules refuses impossible fleet settings)
    except ValueError as exc:
        errors.append(str(exc))
    for key in (
        "classifier_reserved_concurrency",
        "job_monitor_reserved_concurrency",
        "wait_before_acting",
    ):
        if getattr(settings, key) < 0:
            errors.append(f"{key} must be 0 (none) or more")
    if settings.log_retention_days not in LOG_RETENTION_DAYS:
        errors.append(
            f"log_retention_days {settings.log_retention_days} is not a retention CloudWatch "
            f"Logs accepts; use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
        )
    return errors
