"""The settings as the CDK context key ``nodemedic:clusters`` gives them: JSON, checked
whole, every mistake of every cluster named at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from nodemedic.settings import checks, declare
from nodemedic.settings.cluster import ClusterSettings

CONTEXT_KEY = "nodemedic:clusters"


def parse_cluster(raw: Mapping[str, Any]) -> ClusterSettings:
    """Validate one context entry; a typo in a safety knob must fail the synth, not be
    ignored. The ValueError names every mistake of the entry, separated by "; ": a value
    of the wrong type is left out of the checks of values, which report the rest."""
    known = {f.name for f in fields(ClusterSettings)}
    errors = []
    unknown = set(raw) - known
    if unknown:
        errors.append(f"unknown cluster setting(s): {checks.misspelt(unknown, known)}")
    if "name" not in raw:
        errors.append("every cluster needs a name")
    wrong_type = declare.type_errors(raw, ClusterSettings)
    errors += wrong_type.values()
    values = declare.plain(
        {k: v for k, v in raw.items() if k in known - set(wrong_type)}, ClusterSettings
    )
    settings = None
    if "name" in values:
        try:
            settings = ClusterSettings(**values)
        except ValueError as exc:
            errors.append(str(exc))
    if errors or settings is None:
        raise ValueError("; ".join(errors))
    return settings


def parse_clusters(raw: Sequence[Mapping[str, Any]] | None) -> list[ClusterSettings]:
    """Every cluster of the context; the ValueError names every mistake of every cluster,
    one line each (``cluster <n>: ...``, counted from 1)."""
    if raw is not None and not isinstance(raw, list | tuple):
        raise ValueError(f"must be a list of clusters, not {type(raw).__name__}")
    clusters, errors = [], []
    for number, entry in enumerate(raw or (), start=1):
        try:
            clusters.append(parse_cluster(_entry(entry)))
        except ValueError as exc:
            errors.append(f"cluster {number}: {exc}")
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        errors.append("cluster names must be unique")
    if errors:
        raise ValueError("\n".join(errors))
    return clusters


def _entry(entry: Any) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"each cluster is an object with at least a name, not {entry!r}")
    return entry
