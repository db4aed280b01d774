"""A job's output naming a hardware error (a Neuron device's, the fabric's) becomes
evidence about the pod's Node.

What is done, and nothing more (docs/jobs.md, "Hardware errors in a job's output"):
a Warning Event on the Node, a mail to the people who run the cluster, and a metric. Where
AWS's guidance says the hardware is bad, the Event and the mail ask for the node's deep
check: the job monitor never cordons, drains, reboots or replaces, because the line is the
job's text and any tenant may print it. The node's own proven evidence does that.

Told once per node, rule and clock hour: the Event's name is that key, so the API server's
409 on a second create is the deduplication (every rank of a failing job prints the error,
and Lambda may deliver a batch twice), with no ledger write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client

from lambdas.kube.jobs import Job, post_event
from nodemedic.contracts.jobs import NODE_EVENT_NAMESPACE, NODE_EVIDENCE_EVENT_REASONS
from nodemedic.jobs.hardware import Finding

WINDOW_SECONDS = 3600
"""A node and rule are told at most once per clock hour of this length."""


@dataclass(frozen=True)
class NodeReport:
    """A pod's finding and where it ran, as the API says."""

    job: Job
    namespace: str
    pod: str
    node: str
    finding: Finding

    def as_summary(self) -> dict[str, str]:
        return {
            "node": self.node,
            "job": f"{self.job.namespace}/{self.job.name}",
            "pod": f"{self.namespace}/{self.pod}",
            "rule": self.finding.rule.id,
            "action": self.finding.rule.action,
        }


def event_name(report: NodeReport, now: float) -> str:
    return f"{report.node}.nodemedic.{report.finding.rule.id}.{int(now // WINDOW_SECONDS)}"


def message(cluster: str, report: NodeReport) -> str:
    rule, line = report.finding.rule, report.finding.line
    text = (
        f"Pod {report.namespace}/{report.pod} of job {report.job.namespace}/{report.job.name}"
        f" on node {report.node} (cluster {cluster}) printed a hardware error, {rule.id}:"
        f" {rule.summary}.\nLine: {line[:512]}\nIts source recommends: {rule.advice}.\n"
    )
    if rule.action == "deep-check":
        text += (
            "Deep check requested: once the node's work is drained, run"
            " `nodemedic agent --deep-check` in its agent's pod. nodemedic does not act on"
            " a job's line by itself: the job writes it. The node's own kernel lines and"
            " health checks reboot or replace it."
        )
    return text


def report(
    core: client.CoreV1Api,
    notify: Callable[[str, str], None],
    cluster: str,
    found: NodeReport,
    now: float,
) -> bool:
    """Tells ``found`` unless its node and rule were told this hour; whether it was told."""
    reason = NODE_EVIDENCE_EVENT_REASONS[found.finding.rule.action]
    involved = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": found.node,
        "namespace": NODE_EVENT_NAMESPACE,
        "uid": found.node,  # as the kubelet names its Node in its own Events
    }
    text = message(cluster, found)
    try:
        post_event(core, involved, reason, text, warning=True, name=event_name(found, now))
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        return False
    notify(f"nodemedic {cluster}: {reason} on {found.node}", text)
    return True
