"""Logger and metrics for every handler, configured by environment (POWERTOOLS_*)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics()
