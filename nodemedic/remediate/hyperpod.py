"""A SageMaker HyperPod log group's batch → the node it is about, and how far it is trusted.

HyperPod's health monitoring agent and deep health checks write their findings to the
cluster's log group (``nodemedic.detect.hyperpod`` reads them); the classifier turns them
into decisions like any other (source ``hyperpod``), so they pass through the same breaker,
ledger, history, metrics and job resume. Two things differ from nodemedic's own lines:

- Where they come from. Only the groups the cluster lists (``NODEMEDIC_HYPERPOD_LOG_GROUPS``)
  are read; any other is refused whole, since nothing in an event says which cluster of whose
  it belongs to.
- What they prove. They carry no signature, and AWS's managed policy for HyperPod's
  instance role (``AmazonSageMakerClusterInstanceRolePolicy``) lets every node of every
  cluster put events in any stream of any ``/aws/sagemaker/Clusters/*`` group: whoever gets
  a node's instance credentials can write a detection for another node. So an event's
  origin is never proven (``HYPERPOD_UNPROVEN``), and where the origin is enforced it is at
  most notified, unless the cluster says HyperPod's events may act (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from nodemedic.contracts.substrates import (
    HYPERPOD_DEEP_HEALTH_STREAM_PREFIX,
    HYPERPOD_LOG_GROUP_PREFIX,
    HYPERPOD_SOURCE,
)
from nodemedic.detect.classifier import MAX_LINE
from nodemedic.detect.hyperpod import instance_of_result, instance_of_stream
from nodemedic.origin.signing import Unproven
from nodemedic.remediate.batch import LogEvent
from nodemedic.remediate.decision import Identity

UNLISTED_REASON: Final = "unlisted"
"""A HyperPod log group the cluster does not list: its events are refused."""
NO_INSTANCE_REASON: Final = "no-instance"
"""A stream of a listed group that names no instance: its events are refused."""
HYPERPOD_UNPROVEN: Final = Unproven(
    reason="SageMaker HyperPod's event is unsigned and any node of the cluster can write it"
    " (NODEMEDIC_HYPERPOD_EVENTS is notify)",
    forged=False,
)
"""Why no HyperPod event is proven: the reason its capped decision's evidence starts with."""


class Refused(ValueError):
    """A HyperPod payload nodemedic does not classify; ``reason`` is one of the reasons
    above, the metric's dimension."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def is_hyperpod_group(log_group: str) -> bool:
    """The log group is a HyperPod cluster's (listed or not): its payloads are read here,
    never as a nodemedic agent's."""
    return log_group.startswith(HYPERPOD_LOG_GROUP_PREFIX)


NodeEvents = tuple[Identity, list[LogEvent]]
"""One node's events of a batch: classified together, as a batch of its own stream's."""


def hyperpod_nodes(
    log_group: str,
    log_stream: str,
    events: Sequence[LogEvent],
    *,
    listed: Collection[str],
    cluster: str,
) -> tuple[list[NodeEvents], list[LogEvent]]:
    """The nodes of nodemedic's ``cluster`` a HyperPod batch is about, each with its events,
    and the events about no node, read only from a group of ``listed`` (else ``Refused``
    whole). A stream that names its instance (``instance_of_stream``) is that node's; a deep
    health check stream that does not (``DeepHealthCheckResults/<log_stream_id>``) is read
    event by event, each the node its own fields name (``instance_of_result``). Either way
    the state machine looks the instance up in the listed HyperPod clusters before acting:
    one that is no node of theirs is only reported."""
    if log_group not in listed:
        raise Refused(
            UNLISTED_REASON,
            f"log group {log_group!r} is not listed in NODEMEDIC_HYPERPOD_LOG_GROUPS",
        )
    instance_id = instance_of_stream(log_stream)
    if instance_id is not None:
        return [(Identity(cluster, instance_id, HYPERPOD_SOURCE), list(events))], []
    if not log_stream.startswith(HYPERPOD_DEEP_HEALTH_STREAM_PREFIX):
        raise Refused(NO_INSTANCE_REASON, f"log stream {log_stream!r} names no instance")
    by_node: dict[str, list[LogEvent]] = {}
    unnamed: list[LogEvent] = []
    for event in events:
        named = instance_of_result(event.message, MAX_LINE)
        (unnamed if named is None else by_node.setdefault(named, [])).append(event)
    nodes = [
        (Identity(cluster, instance, HYPERPOD_SOURCE), found) for instance, found in by_node.items()
    ]
    return nodes, unnamed


def hyperpod_origin(event: LogEvent) -> Unproven:
    """No HyperPod event proves where it comes from (``HYPERPOD_UNPROVEN``)."""
    return HYPERPOD_UNPROVEN
