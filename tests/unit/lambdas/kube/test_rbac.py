"""The kube Lambda's and the job monitor's ClusterRoles grant exactly what their code calls:
nothing it never uses (a stolen Lambda role must not be able to do more than nodemedic
does), nothing missing (an op would fail with Forbidden on a real cluster). The job
monitor's calls are those reachable from lambdas/jobs through the kube functions it
imports, not every call of lambdas/kube."""

from __future__ import annotations

import ast
import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from lambdas.kube.karpenter_repair import KARPENTER_DEPLOYMENT
from tests.support.paths import ROOT

VERBS = {"list": "list", "read": "get", "patch": "patch", "delete": "delete", "create": "create"}
_CALL = re.compile(
    r"^(?P<verb>list|read|patch|delete|create|replace)_(?:namespaced_)?"
    r"(?P<kind>node|pod|event|job|deployment)"
    r"(?:_(?P<sub>status|eviction))?(?:_for_all_namespaces)?$"
)
_GROUPS = {"job": "batch:", "deployment": "apps:"}


def permission(method: str) -> tuple[str, str] | None:
    """``(resource, verb)`` of a ``CoreV1Api`` method, e.g. ``create_namespaced_pod_eviction``
    → ``("pods/eviction", "create")``; None for anything that is no API call."""
    found = _CALL.match(method)
    if found is None:
        return None
    resource = f"{found['kind']}s" + (f"/{found['sub']}" if found["sub"] else "")
    return _GROUPS.get(found["kind"], "") + resource, VERBS[found["verb"]]


def custom_permission(method: str) -> tuple[str, str] | None:
    """A ``CustomObjectsApi`` method's permission. Two custom kinds: PyTorchJob, namespaced
    (lambdas/kube/resume.py), e.g. ``get_namespaced_custom_object`` →
    ``("kubeflow.org:pytorchjobs", "get")``; Karpenter's NodeClaim, the one cluster-scoped
    (lambdas/kube/nodeclaims.py), e.g. ``delete_cluster_custom_object`` →
    ``("karpenter.sh:nodeclaims", "delete")``."""
    found = re.match(
        r"^(?P<verb>get|patch|list|delete)_(?P<scope>namespaced|cluster)_custom_object$", method
    )
    if found is None:
        return None
    kind = (
        "kubeflow.org:pytorchjobs" if found["scope"] == "namespaced" else "karpenter.sh:nodeclaims"
    )
    return kind, found["verb"]


def api_call(node: ast.AST, where: str) -> tuple[str, str] | None:
    """The permission of a ``core.<method>(...)``, ``batch.<method>(...)`` or
    ``custom.<method>(...)`` call; None for any other node."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) in {"core", "batch", "custom", "apps"}
    ):
        return None
    read = custom_permission if ast.unparse(node.func.value) == "custom" else permission
    wanted = read(node.func.attr)
    assert wanted is not None, f"{where}: {node.func.attr} is not understood"
    return wanted


@cache
def functions(module: str) -> dict[str, ast.FunctionDef]:
    """The top-level functions of a module of the repository, by name."""
    tree = ast.parse((ROOT / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    return {d.name: d for d in tree.body if isinstance(d, ast.FunctionDef)}


@cache
def kube_imports(module: str) -> dict[str, tuple[str, str]]:
    """``local name → (module, name)`` of a module's ``from lambdas.kube.<m> import``."""
    tree = ast.parse((ROOT / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: (i.module, alias.name)
        for i in tree.body
        if isinstance(i, ast.ImportFrom) and i.module and i.module.startswith("lambdas.kube.")
        for alias in i.names
    }


def called() -> set[tuple[str, str]]:
    """Every API call in the kube Lambda's code, as permissions."""
    return {
        wanted
        for path in sorted((ROOT / "lambdas" / "kube").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (wanted := api_call(node, path.name)) is not None
    }


def reached(package: str) -> set[tuple[str, str]]:
    """The API calls of ``package``'s modules and of every function of lambdas.kube they
    call, followed through ``from lambdas.kube.<module> import <function>`` and calls
    within a module."""
    found: set[tuple[str, str]] = set()
    seen: set[tuple[str, str]] = set()
    work: list[tuple[str, ast.AST]] = [
        (f"{package}.{path.stem}", ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted((ROOT / package.replace(".", "/")).glob("*.py"))
    ]
    while work:
        module, tree = work.pop()
        for node in ast.walk(tree):
            if (wanted := api_call(node, module)) is not None:
                found.add(wanted)
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            name = node.func.id
            target = (module, name) if name in functions(module) else kube_imports(module).get(name)
            if target is None or target in seen or target[1] not in functions(target[0]):
                continue  # a class, or a function already followed
            seen.add(target)
            work.append((target[0], functions(target[0])[target[1]]))
    return found


def _rules(role_name: str) -> list[dict[str, Any]]:
    text = resources.files("lambdas.kube").joinpath("rbac.yaml").read_text(encoding="utf-8")
    (role,) = [
        d
        for d in yaml.safe_load_all(text)
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role_name
    ]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def granted(role_name: str = "nodemedic-remediator") -> set[tuple[str, str]]:
    return {
        (resource if not group else f"{group}:{resource}", verb)
        for rule in _rules(role_name)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_role_grants_exactly_what_the_code_calls() -> None:
    assert granted() == called()


def test_the_job_monitors_role_grants_exactly_what_its_code_calls_and_nothing_on_nodes() -> None:
    job_monitor = granted("nodemedic-job-monitor")
    assert job_monitor == reached("lambdas.jobs")
    assert not {resource for resource, _ in job_monitor} & {"nodes", "nodes/status"}
    assert ("pods/eviction", "create") not in job_monitor


def test_the_calls_are_read_as_permissions() -> None:
    assert permission("list_pod_for_all_namespaces") == ("pods", "list")
    assert permission("patch_node_status") == ("nodes/status", "patch")
    assert permission("create_namespaced_pod_eviction") == ("pods/eviction", "create")
    assert permission("read_node") == ("nodes", "get")
    assert permission("api_client") is None
    assert permission("patch_namespaced_job") == ("batch:jobs", "patch")
    assert permission("create_namespaced_event") == ("events", "create")


def test_the_deployment_read_is_karpenters_alone() -> None:
    """The NodeRepair check reads one Deployment by name; a role that could read every
    Deployment would see every workload's environment."""
    (rule,) = [r for r in _rules("nodemedic-remediator") if "deployments" in r["resources"]]
    assert rule["resourceNames"] == [KARPENTER_DEPLOYMENT]
    assert rule["verbs"] == ["get"]


def test_custom_object_calls_are_read_as_their_kind() -> None:
    assert custom_permission("get_namespaced_custom_object") == ("kubeflow.org:pytorchjobs", "get")
    assert custom_permission("list_cluster_custom_object") == ("karpenter.sh:nodeclaims", "list")
    assert permission("read_namespaced_deployment") == ("apps:deployments", "get")
