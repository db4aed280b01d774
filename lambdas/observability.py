"""Logger, metrics and tracer for every handler, configured by environment (POWERTOOLS_*).

The namespace defaults to the pipeline's own (``NodeMedic``, as stacks/metrics.py names
it) so that a handler imported before its environment is set still publishes somewhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from nodemedic.contracts.env import ENV_METRICS_NAMESPACE
from nodemedic.contracts.metrics import METRICS_NAMESPACE


@dataclass(frozen=True)
class ObservabilityEnv:
    """What every function's environment holds for the objects below, read once at import
    (``lambdas.environment``; Powertools reads the rest of POWERTOOLS_* itself)."""

    metrics_namespace: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ObservabilityEnv:
        return cls(environ.get(ENV_METRICS_NAMESPACE, METRICS_NAMESPACE))


logger = Logger()
metrics = Metrics(namespace=ObservabilityEnv.from_environ(os.environ).metrics_namespace)
tracer = Tracer(patch_modules=("botocore", "httplib"))
"""X-Ray (the functions run with active tracing): the handler's segment and a subsegment per
AWS and Kubernetes API call it makes. Outside Lambda (tests, the local world) Powertools
turns it off by itself. Only the two HTTP stacks the handlers call through are patched
(botocore, and http.client under the Kubernetes client's urllib3): patching every library
the SDK knows imports each one present, ``requests`` alone ~35 ms of cold start."""


def publish(name: str, unit: MetricUnit, value: float, dimensions: Mapping[str, str]) -> None:
    """One datapoint with exactly ``dimensions``, as an EMF line of its own (the handler's
    ``metrics`` takes one set of dimension values per invocation). Powertools would add a
    ``service`` dimension from ``POWERTOOLS_SERVICE_NAME``; the dimension set is part of a
    metric's identity, and the alarms and dashboard query these dimensions and no other."""
    with single_metric(name=name, unit=unit, value=value, namespace=metrics.namespace) as metric:
        metric.service = ""  # no service dimension
        for key, dimension in dimensions.items():
            metric.add_dimension(name=key, value=dimension)


def publish_count(name: str, value: float, dimensions: Mapping[str, str]) -> None:
    publish(name, MetricUnit.Count, value, dimensions)
