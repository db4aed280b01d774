"""Whether Karpenter's own node repair is on: its ``NodeRepair`` feature gate, read from the
Karpenter Deployment's spec. With it on, Karpenter replaces a node whose condition matches
one of its cloud provider's repair policies, and nodemedic would act on the same node at the
same time (docs/deploy.md, "Karpenter": how to run both). The census reports it on every
reconcile, and the kube Lambda's log warns, so the overlap is seen where nodemedic runs.

Karpenter reads its gates from ``--feature-gates`` when given, else from the environment
variable ``FEATURE_GATES`` (what its Helm chart sets from ``settings.featureGates``), else
its defaults, where ``NodeRepair`` is off (sigs.k8s.io/karpenter v1.15.0,
pkg/operator/options/options.go). A gate list is ``Name=bool,...``; the last setting of a
name wins, and a bool is what Go's ``strconv.ParseBool`` accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubernetes import client

from lambdas.observability import logger

KARPENTER_DEPLOYMENT = "karpenter"
"""The Deployment of Karpenter's Helm chart installed as release ``karpenter``, as its
getting-started guide installs it; the only Deployment the kube Lambda may read."""
KARPENTER_NAMESPACES = ("kube-system", "karpenter")
"""Where Karpenter's guides install it: ``kube-system`` (today's getting-started guide) and
``karpenter`` (the guides before v0.33)."""
NODE_REPAIR_GATE = "NodeRepair"
_FLAG = "--feature-gates"
_ENV = "FEATURE_GATES"
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def node_repair_on(core: client.CoreV1Api) -> list[str]:
    """``<namespace>/<name>`` of each Karpenter Deployment whose controller runs with
    ``NodeRepair`` on; empty where there is none. A Deployment the Lambda may not read
    (RBAC of a release before this check) is logged and left out: the census goes on."""
    apps = client.AppsV1Api(core.api_client)
    found = []
    for namespace in KARPENTER_NAMESPACES:
        try:
            deployment = apps.read_namespaced_deployment(KARPENTER_DEPLOYMENT, namespace)
        except client.ApiException as exc:
            if exc.status == 403:
                logger.warning(
                    "cannot read the Karpenter Deployment",
                    extra={"namespace": namespace, "status": exc.status},
                )
            elif exc.status != 404:
                raise
            continue
        containers = deployment.spec.template.spec.containers or []
        if any(gate_on(c.args or [], _env_value(c.env or [])) for c in containers):
            found.append(f"{namespace}/{KARPENTER_DEPLOYMENT}")
    if found:
        logger.warning(
            "Karpenter's NodeRepair feature gate is on: Karpenter replaces unhealthy nodes "
            "that nodemedic repairs too; see docs/deploy.md, Karpenter",
            extra={"deployments": found},
        )
    return found


def gate_on(args: Sequence[str], env: str | None) -> bool:
    """``NodeRepair``'s value as Karpenter reads it from a container's arguments and its
    ``FEATURE_GATES`` (None: not set)."""
    flag = _flag_value(args)
    return _gate(flag if flag is not None else env or "") is True


def _flag_value(args: Sequence[str]) -> str | None:
    """The last ``--feature-gates`` value (``--feature-gates=V`` or ``--feature-gates V``;
    Go's flag package also takes a single dash)."""
    found = None
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name not in (_FLAG, _FLAG[1:]):
            continue
        if eq:
            found = value
        elif i + 1 < len(args):
            found = args[i + 1]
    return found


def _env_value(env: Sequence[Any]) -> str | None:
    """The last literal ``FEATURE_GATES`` (one from a ConfigMap or Secret is not read)."""
    values = [e.value for e in env if e.name == _ENV and e.value is not None]
    return values[-1] if values else None


def _gate(gates: str) -> bool | None:
    found = None
    for item in gates.split(","):
        name, _, value = item.strip().partition("=")
        if name.strip() == NODE_REPAIR_GATE:
            value = value.strip()
            found = True if value in _TRUE else False if value in _FALSE else found
    return found
