"""nodemedic's admission policies put in force on the shared real kube-apiserver for one
test and removed after: as the chart renders them, or as lambdas/kube/admission-policies.yaml
ships them for clusters without the chart."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.support.helm import REQUIRED, render
from tests.support.paths import ROOT
from world.kube.chart import documents, helm_binary

SHIPPED = ROOT / "lambdas/kube/admission-policies.yaml"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
LABEL_POLICY = "nodemedic-label-requests"
JOB_OWNER_POLICY = "nodemedic-job-owners"
Probe = Callable[[], None]
"""A dry-run write the policy refuses (ApiException 403 or 422) once it is in force."""


def named(found: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Of ``found``, the admission policy ``name`` and its binding."""
    return [d for d in found if d["kind"] in POLICY_KINDS and d["metadata"]["name"] == name]


def shipped_documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(SHIPPED.read_text(encoding="utf-8")))


def policy_documents(
    name: str, *, shipped: bool, values: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The policy ``name`` and its binding: the chart's, rendered with ``values`` (JSON
    values), or the shipped manifest's."""
    if shipped:
        return named(shipped_documents(), name)
    return named(documents(render(helm_binary(), REQUIRED, json_values=dict(values or {}))), name)


@contextlib.contextmanager
def in_force(api: client.ApiClient, made: Sequence[dict[str, Any]], probe: Probe) -> Iterator[None]:
    """``made`` (the policy, its binding, any RBAC the test needs) created, and the policy
    enforced (``probe`` refused) until the block ends; then deleted, and no longer enforced
    (the API server is shared with other tests)."""
    dynamic = DynamicClient(api)
    kinds = [dynamic.resources.get(api_version=d["apiVersion"], kind=d["kind"]) for d in made]
    for kind, document in zip(kinds, made, strict=True):
        kind.create(body=document)
    try:
        _until(probe, enforced=True)
        yield
    finally:
        for kind, document in zip(kinds, made, strict=True):
            kind.delete(name=document["metadata"]["name"])
        # Gone from the API server's cache too, so the next policy's is the one that answers.
        _until(probe, enforced=False)


def _until(probe: Probe, *, enforced: bool, timeout: float = 15.0) -> None:
    """A policy takes effect (or ends) once the API server's cache has it (or not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            probe()
        except client.ApiException as exc:
            if exc.status not in (403, 422):
                raise
            if enforced:
                return
        else:
            if not enforced:
                return
        time.sleep(0.2)
    raise AssertionError(f"the admission policy still {'not ' * enforced}enforced")
