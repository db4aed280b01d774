"""The kube Lambda's ClusterRole grants exactly what its code calls: nothing it never uses
(a stolen Lambda role must not be able to do more than nodemedic does), nothing missing
(an op would fail with Forbidden on a real cluster)."""

from __future__ import annotations

import ast
import re
from importlib import resources

import yaml

from tests.support.paths import ROOT

VERBS = {"list": "list", "read": "get", "patch": "patch", "delete": "delete", "create": "create"}
_CALL = re.compile(
    r"^(?P<verb>list|read|patch|delete|create|replace)_(?:namespaced_)?(?P<kind>node|pod|event|job)"
    r"(?:_(?P<sub>status|eviction))?(?:_for_all_namespaces)?$"
)


def permission(method: str) -> tuple[str, str] | None:
    """``(resource, verb)`` of a ``CoreV1Api`` method, e.g. ``create_namespaced_pod_eviction``
    → ``("pods/eviction", "create")``; None for anything that is no API call."""
    found = _CALL.match(method)
    if found is None:
        return None
    resource = f"{found['kind']}s" + (f"/{found['sub']}" if found["sub"] else "")
    group = "batch:" if found["kind"] == "job" else ""
    return group + resource, VERBS[found["verb"]]


def custom_permission(method: str) -> tuple[str, str] | None:
    """A ``CustomObjectsApi`` method's permission: PyTorchJob is the one custom kind
    nodemedic reads (lambdas/kube/resume.py), e.g. ``get_namespaced_custom_object`` →
    ``("kubeflow.org:pytorchjobs", "get")``."""
    found = re.match(r"^(?P<verb>get|patch)_namespaced_custom_object$", method)
    return ("kubeflow.org:pytorchjobs", found["verb"]) if found else None


def called() -> set[tuple[str, str]]:
    """Every ``core.<method>(...)``, ``batch.<method>(...)`` and ``custom.<method>(...)``
    call in the kube Lambda's code, as permissions."""
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "lambdas" / "kube").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and ast.unparse(node.func.value) in {"core", "batch", "custom"}
            ):
                read = custom_permission if ast.unparse(node.func.value) == "custom" else permission
                wanted = read(node.func.attr)
                assert wanted is not None, f"{path.name}: {node.func.attr} is not understood"
                found.add(wanted)
    return found


def granted() -> set[tuple[str, str]]:
    text = resources.files("lambdas.kube").joinpath("rbac.yaml").read_text(encoding="utf-8")
    (role,) = [d for d in yaml.safe_load_all(text) if d["kind"] == "ClusterRole"]
    return {
        (resource if not group else f"{group}:{resource}", verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_role_grants_exactly_what_the_code_calls() -> None:
    assert granted() == called()


def test_the_calls_are_read_as_permissions() -> None:
    assert permission("list_pod_for_all_namespaces") == ("pods", "list")
    assert permission("patch_node_status") == ("nodes/status", "patch")
    assert permission("create_namespaced_pod_eviction") == ("pods/eviction", "create")
    assert permission("read_node") == ("nodes", "get")
    assert permission("api_client") is None
    assert permission("patch_namespaced_job") == ("batch:jobs", "patch")
    assert permission("create_namespaced_event") == ("events", "create")
