"""Which job a pod's log line belongs to, as the cluster records it: the pod's controller
owner reference (a ``batch/v1`` Job or a Kubeflow PyTorchJob, by uid), read from the API.

A pod's labels are not evidence: anyone who may create a pod in the namespace can label it
``job-name: <another job>``, and its lines would then feed that job's rules and could get it
restarted. The owner reference of a pod a controller made names the controller's uid, and
the job read by name must carry that uid, so a job deleted and made again under its name is
not fed the old one's lines either. The reference is the pod creator's text, though: the
chart's job owner policy (``jobOwners``, or lambdas/kube/admission-policies.yaml) is what
lets only the job's controller write one naming a job (docs/security.md, "Training jobs'
lines"); the pod's labels and managedFields, which its creator writes too, prove nothing.
"""

from __future__ import annotations

from kubernetes import client

from lambdas.kube.jobs import Job
from lambdas.kube.resume import RESUMABLE, JobRef, read_job_ref


def job_of_pod(core: client.CoreV1Api, namespace: str, pod: str) -> Job | None:
    """The job controlling the pod ``namespace/pod``; None when the pod is gone, has no
    controller, or its controller is no job nodemedic knows."""
    return placement(core, namespace, pod)[0]


def placement(core: client.CoreV1Api, namespace: str, pod: str) -> tuple[Job | None, str | None]:
    """The job controlling the pod ``namespace/pod`` (as ``job_of_pod``) and the Node the
    pod runs on (``spec.nodeName``; None for one not scheduled yet), from one read. The
    node is where the pod's lines came from, not proof of what they say: whoever creates
    the pod may name any node it may schedule on. Listed by a field selector on the name:
    the ``list`` the role already has on pods reads one pod."""
    found = core.list_namespaced_pod(namespace, field_selector=f"metadata.name={pod}").items
    if not found:
        return None, None
    owners = found[0].metadata.owner_references or []
    owner = next((o for o in owners if o.controller), None)
    if owner is None or (owner.api_version, owner.kind) not in RESUMABLE:
        return None, None
    job = read_job_ref(
        core, JobRef(owner.api_version, owner.kind, namespace, owner.name, owner.uid)
    )
    return job, found[0].spec.node_name if job is not None else None
