"""Whether Karpenter's own node repair is on, and whether it may reboot: its repair feature
gates, read from the Karpenter Deployment's spec. With ``NodeRepair`` on, Karpenter replaces
a node whose condition matches one of its cloud provider's repair policies; with the AWS
provider's ``RebootForRepair`` on as well, it reboots the node instead where the policy says
so. Either way nodemedic would act on the same node at the same time (docs/deploy.md,
"Karpenter": how to run both). The census reports the gates on every reconcile, and the
kube Lambda's log warns, so the overlap is seen where nodemedic runs.

Karpenter reads a gate list from its flag when given, else from its environment variable
(what its Helm chart sets), else its defaults, where every gate read here is off:
``--feature-gates`` / ``FEATURE_GATES`` for the core's gates (sigs.k8s.io/karpenter v1.15.0,
pkg/operator/options/options.go), ``--aws-feature-gates`` / ``AWS_FEATURE_GATES`` for the
AWS provider's (github.com/aws/karpenter-provider-aws v1.15.0, as its settings page lists
them: karpenter.sh/v1.15/reference/settings). A gate list is ``Name=bool,...``; the last
setting of a name wins, and a bool is what Go's ``strconv.ParseBool`` accepts.

Reboot is a repair action of the core's ``NodeRepair`` (v1.15.0, pkg/cloudprovider/types.go
``RebootNode``): ``RebootForRepair`` without ``NodeRepair`` repairs nothing, so the warning
needs ``NodeRepair`` on. Karpenter's ``--legacy-node-repair`` ignores the reboot policies; it
is not read, so the warning may name reboots that never come: it errs toward the overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lambdas.observability import logger

KARPENTER_DEPLOYMENT = "karpenter"
"""The Deployment of Karpenter's Helm chart installed as release ``karpenter``, as its
getting-started guide installs it; the only Deployment the kube Lambda may read."""
KARPENTER_NAMESPACES = ("kube-system", "karpenter")
"""Where Karpenter's guides install it: ``kube-system`` (today's getting-started guide) and
``karpenter`` (the guides before v0.33)."""


@dataclass(frozen=True)
class Gate:
    """A feature gate and where Karpenter reads its list: a flag, else a variable."""

    name: str
    flag: str
    env: str


NODE_REPAIR = Gate("NodeRepair", "--feature-gates", "FEATURE_GATES")
REBOOT_FOR_REPAIR = Gate("RebootForRepair", "--aws-feature-gates", "AWS_FEATURE_GATES")
REPAIR_GATES = (NODE_REPAIR, REBOOT_FOR_REPAIR)
"""The gates that decide what Karpenter's own repair does to a node, in the census's order."""
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def repair_gates(core: client.CoreV1Api) -> dict[str, list[str]]:
    """``<namespace>/<name>`` of each Karpenter Deployment there is, and the names of the
    repair gates its controller runs with on (empty: none). A Deployment the Lambda may not
    read (RBAC of a release before this check) is logged and left out: the census goes on."""
    apps = client.AppsV1Api(core.api_client)
    found = {}
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
        found[f"{namespace}/{KARPENTER_DEPLOYMENT}"] = _deployment_gates(deployment)
    _warn(found)
    return found


def node_repair_on(gates: Mapping[str, Sequence[str]]) -> list[str]:
    """The Deployments of ``repair_gates`` whose Karpenter repairs nodes at all."""
    return [deployment for deployment, on in gates.items() if NODE_REPAIR.name in on]


def gates_on(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The names of the repair gates on, as Karpenter reads them from a container's arguments
    and its environment variables."""
    return [gate.name for gate in REPAIR_GATES if _gate_on(gate, args, env)]


def _deployment_gates(deployment: Any) -> list[str]:
    """The repair gates on in any of the Deployment's containers (Karpenter's chart runs one)."""
    containers = deployment.spec.template.spec.containers or []
    on = {name for c in containers for name in gates_on(c.args or [], _literal_env(c.env))}
    return [gate.name for gate in REPAIR_GATES if gate.name in on]


def _warn(found: Mapping[str, Sequence[str]]) -> None:
    repairing = {d: list(on) for d, on in found.items() if NODE_REPAIR.name in on}
    if not repairing:
        return
    rebooting = any(REBOOT_FOR_REPAIR.name in on for on in repairing.values())
    does = "reboots or replaces" if rebooting else "replaces"
    with_reboot = f", with {REBOOT_FOR_REPAIR.name}" if rebooting else ""
    logger.warning(
        f"Karpenter's NodeRepair feature gate is on{with_reboot}: Karpenter {does} unhealthy "
        "nodes that nodemedic repairs too; see docs/deploy.md, Karpenter",
        extra={"deployments": list(repairing), "gates": repairing},
    )


def _gate_on(gate: Gate, args: Sequence[str], env: Mapping[str, str]) -> bool:
    flag = _flag_value(gate.flag, args)
    return _gate(gate.name, flag if flag is not None else env.get(gate.env, "")) is True


def _flag_value(flag: str, args: Sequence[str]) -> str | None:
    """The last ``flag`` value (``--flag=V`` or ``--flag V``; Go's flag package also takes a
    single dash)."""
    found = None
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name not in (flag, flag[1:]):
            continue
        if eq:
            found = value
        elif i + 1 < len(args):
            found = args[i + 1]
    return found


def _literal_env(env: Sequence[Any] | None) -> dict[str, str]:
    """Each variable's last literal value (one from a ConfigMap or Secret is not read)."""
    return {e.name: e.value for e in env or [] if e.value is not None}


def _gate(name: str, gates: str) -> bool | None:
    found = None
    for item in gates.split(","):
        key, _, value = item.strip().partition("=")
        if key.strip() == name:
            value = value.strip()
            found = True if value in _TRUE else False if value in _FALSE else found
    return found
