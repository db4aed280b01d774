"""The API server's refusals, told apart from its answers: a 429 (priority and fairness
shedding load), a 5xx (a failing admission webhook, etcd away, an upgrade) or no answer at
all is the cluster's state for the moment, not the op's. The op is raised again as
``KubeUnavailable``, which the state machine retries with backoff and full jitter so that a
storm's executions do not come back in step, and each refusal is counted (``KubeRefused``).

An op that reads a status as its own answer catches it first: the drain's 429 is a
PodDisruptionBudget's "not now" (``lambdas/kube/drain.py``), a 404 is "gone".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from lambdas.observability import logger, publish_count
from nodemedic.contracts.metrics import CLUSTER_DIMENSION, KUBE_REFUSED_METRIC, REASON_DIMENSION

TOO_MANY_REQUESTS = 429
UNREACHABLE = "unreachable"


class KubeUnavailable(Exception):
    """Its name is the error Step Functions matches (``contracts.kube.KUBE_UNAVAILABLE``)."""


def refusal(exc: BaseException) -> str | None:
    """The reason a call failed when the API server, not the request, is to blame: the
    status of a 429 or 5xx answer, ``unreachable`` when none came; None otherwise."""
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        return str(status) if status == TOO_MANY_REQUESTS or status >= 500 else None
    return UNREACHABLE if isinstance(exc, HTTPError) else None


@contextmanager
def refusals_retried(cluster: str) -> Iterator[None]:
    """Run an op; a refusal is counted, logged with the API server's words, and raised as
    ``KubeUnavailable``; any other error goes on as it was."""
    try:
        yield
    except (ApiException, HTTPError) as exc:
        reason = refusal(exc)
        if reason is None:
            raise
        dimensions = {CLUSTER_DIMENSION: cluster, REASON_DIMENSION: reason}
        publish_count(KUBE_REFUSED_METRIC, 1, dimensions)
        said = exc.body if isinstance(exc, ApiException) and exc.body else str(exc)
        logger.warning("the API server refused", extra={"reason": reason, "answer": said})
        raise KubeUnavailable(f"the API server refused ({reason}): {str(said)[:400]}") from exc
