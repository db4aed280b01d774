"""Logger and metrics for every handler, configured by environment (POWERTOOLS_*).

The namespace defaults to the pipeline's own (``NodeMedic``, as stacks/metrics.py names
it) so that a handler imported before its environment is set still publishes somewhere.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics

from nodemedic.contracts import ENV_METRICS_NAMESPACE, METRICS_NAMESPACE

logger = Logger()
metrics = Metrics(namespace=os.environ.get(ENV_METRICS_NAMESPACE, METRICS_NAMESPACE))
