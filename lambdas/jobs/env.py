"""The job monitor's environment (``lambdas.environment``): its cluster, the ledger that
keeps its jobs' state, the topic it tells people through, and its breaker's limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.environment import EnvError, cached, required
from lambdas.kube.client import ClusterAccess
from nodemedic.contracts.env import ENV_CLUSTER, ENV_JOB_BREAKER, ENV_LEDGER_TABLE, ENV_TOPIC_ARN
from nodemedic.jobs.breaker import JobLimits


@dataclass(frozen=True)
class JobsEnv:
    cluster: str
    """The cluster a scheduled run monitors (a delivery names its own)."""
    ledger_table: str
    topic_arn: str | None
    """None: a failed job is not told (the stack always sets it)."""
    limits: JobLimits
    access: ClusterAccess

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> JobsEnv:
        return cls(
            cluster=environ.get(ENV_CLUSTER, ""),
            ledger_table=required(environ, ENV_LEDGER_TABLE),
            topic_arn=environ.get(ENV_TOPIC_ARN) or None,
            limits=_limits(environ.get(ENV_JOB_BREAKER, "")),
            access=ClusterAccess.from_environ(environ),
        )


def _limits(raw: str) -> JobLimits:
    """Unset: the defaults. The stack writes JSON (``nodemedic.jobs.breaker.JobLimits``)."""
    try:
        found = json.loads(raw or "{}")
        if not isinstance(found, dict):
            raise TypeError(f"not a JSON object: {raw!r}")
        return JobLimits.from_mapping(found)
    except (ValueError, TypeError) as exc:
        raise EnvError(f"{ENV_JOB_BREAKER}: {exc}") from exc


env = cached(JobsEnv.from_environ)
