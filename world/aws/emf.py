"""CloudWatch Embedded Metric Format, read as CloudWatch Logs reads it at ingestion.

A log event whose message is a JSON object with an ``_aws`` member is an EMF document: each
of its metric directives becomes datapoints in CloudWatch, one metric per dimension set,
without a ``PutMetricData`` call. The Lambdas publish their pipeline metrics so (Powertools
prints the documents on standard output, which Lambda sends to the function's log group),
and so does the agent's telemetry (``agent.telemetry.emf``). The rules below are the
specification's (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch_Embedded_Metric_Format_Specification.html, read 2026-11):

- the message is one JSON object, nothing before or after it; ``_aws`` is an object with
  ``Timestamp`` (milliseconds since the epoch) and ``CloudWatchMetrics`` (directives);
- a directive has ``Namespace`` (1 to 255 characters), ``Dimensions`` (at least one
  dimension set, each at most 30 keys, an empty one allowed) and ``Metrics`` (at most 100
  definitions: ``Name``, optional ``Unit``, a CloudWatch unit, ``None`` when left out, and
  optional ``StorageResolution``, 1 or 60);
- every key a directive names is a member of the root, not nested: a dimension's value is
  a string, a metric's a number or an array of at most 100 numbers;
- a document breaking a rule yields no metric at all; CloudWatch counts it in ``AWS/Logs``
  (``EMFParsingErrors`` when the JSON cannot be read, ``EMFValidationErrors`` when it breaks
  the specification, per log group) and keeps the log event as it came.

Public interface: ``read(message) -> Extraction | None``, ``Datum``, ``Extraction``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeGuard

import botocore.session

PARSING_ERRORS: Final = "EMFParsingErrors"
VALIDATION_ERRORS: Final = "EMFValidationErrors"
ERRORS_NAMESPACE: Final = "AWS/Logs"
ERRORS_DIMENSION: Final = "LogGroupName"
MAX_DIMENSIONS: Final = 30
MAX_METRICS: Final = 100
MAX_VALUES: Final = 100
RESOLUTIONS: Final = (1, 60)
_NAME_LENGTH: Final = range(1, 256)
UNITS: Final = frozenset(
    botocore.session.get_session().get_service_model("cloudwatch").shape_for("StandardUnit").enum
)
"""CloudWatch's units, as its API model lists them (``MetricDatum.Unit``)."""


class Invalid(ValueError):
    """The document breaks the specification: it yields no metric."""


@dataclass(frozen=True)
class Datum:
    """One metric of one dimension set: what a ``PutMetricData`` ``MetricDatum`` holds."""

    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]
    """(name, value), in the order of the dimension set."""
    values: tuple[float, ...]
    unit: str
    timestamp: datetime
    storage_resolution: int = 60


@dataclass(frozen=True)
class Extraction:
    """What one EMF document gave: its datapoints, or the error CloudWatch counts."""

    data: tuple[Datum, ...] = ()
    error: str | None = None
    """``PARSING_ERRORS`` or ``VALIDATION_ERRORS``; None when the document was valid."""
    reason: str = ""


def read(message: str) -> Extraction | None:
    """The metrics of ``message`` if it is an EMF document; None for any other log line.

    A line is taken for EMF by its ``_aws`` member; one that names ``_aws`` but is no JSON
    object is a parsing error, as CloudWatch counts one."""
    text = message.strip()
    if not text.startswith("{") or '"_aws"' not in text:
        return None
    try:
        document = json.loads(text)
    except ValueError as exc:
        return Extraction(error=PARSING_ERRORS, reason=f"not JSON: {exc}")
    if not isinstance(document, dict) or "_aws" not in document:
        return None
    try:
        return Extraction(data=tuple(_extract(document)))
    except Invalid as exc:
        return Extraction(error=VALIDATION_ERRORS, reason=str(exc))


def _extract(document: dict[str, Any]) -> list[Datum]:
    metadata = document["_aws"]
    if not isinstance(metadata, dict):
        raise Invalid("_aws is not an object")
    stamp = metadata.get("Timestamp")
    if not _number(stamp):
        raise Invalid("_aws.Timestamp is not a number of milliseconds")
    timestamp = datetime.fromtimestamp(stamp / 1000, UTC)
    directives = metadata.get("CloudWatchMetrics")
    if not isinstance(directives, list):
        raise Invalid("_aws.CloudWatchMetrics is not an array")
    return [datum for d in directives for datum in _directive(d, document, timestamp)]


def _directive(directive: Any, root: dict[str, Any], timestamp: datetime) -> list[Datum]:
    if not isinstance(directive, dict):
        raise Invalid("a metric directive is not an object")
    namespace = directive.get("Namespace")
    if not isinstance(namespace, str) or len(namespace) not in _NAME_LENGTH:
        raise Invalid("Namespace is not a string of 1 to 255 characters")
    sets = directive.get("Dimensions")
    if not isinstance(sets, list) or not sets:
        raise Invalid(f"{namespace}: Dimensions is not an array of dimension sets")
    metrics = directive.get("Metrics")
    if not isinstance(metrics, list) or len(metrics) > MAX_METRICS:
        raise Invalid(f"{namespace}: Metrics is not an array of at most {MAX_METRICS}")
    dimension_sets = [_dimensions(s, root, namespace) for s in sets]
    data = []
    for definition in metrics:
        name, unit, resolution = _definition(definition, namespace)
        values = _values(root.get(name), f"{namespace}/{name}")
        data += [
            Datum(namespace, name, dimensions, values, unit, timestamp, resolution)
            for dimensions in dimension_sets
        ]
    return data


def _dimensions(keys: Any, root: dict[str, Any], namespace: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(keys, list) or len(keys) > MAX_DIMENSIONS:
        raise Invalid(f"{namespace}: a dimension set is not an array of at most 30 keys")
    found = []
    for key in keys:
        value = root.get(key) if isinstance(key, str) else None
        if not isinstance(value, str):
            raise Invalid(f"{namespace}: dimension {key!r} has no string value on the root")
        found.append((key, value))
    return tuple(found)


def _definition(definition: Any, namespace: str) -> tuple[str, str, int]:
    if not isinstance(definition, dict):
        raise Invalid(f"{namespace}: a metric definition is not an object")
    name = definition.get("Name")
    if not isinstance(name, str) or len(name) not in _NAME_LENGTH:
        raise Invalid(f"{namespace}: a metric's Name is not a string of 1 to 255 characters")
    unit = definition.get("Unit", "None")
    if unit not in UNITS:
        raise Invalid(f"{namespace}/{name}: {unit!r} is no CloudWatch unit")
    resolution = definition.get("StorageResolution", 60)
    if resolution not in RESOLUTIONS or isinstance(resolution, bool):
        raise Invalid(f"{namespace}/{name}: StorageResolution {resolution!r} is not 1 or 60")
    return name, str(unit), int(resolution)


def _values(target: Any, what: str) -> tuple[float, ...]:
    values = target if isinstance(target, list) else [target]
    if not values or len(values) > MAX_VALUES or not all(_number(v) for v in values):
        raise Invalid(f"{what}: the root holds no number nor array of at most 100 numbers")
    return tuple(float(v) for v in values)


def _number(value: Any) -> TypeGuard[int | float]:
    """A finite JSON number (CloudWatch takes no NaN nor infinity; Python reads ``NaN`` in
    JSON, and ``true`` as a bool, which is an int too)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)
