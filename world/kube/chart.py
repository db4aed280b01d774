"""The Helm chart (deploy/chart/nodemedic) as helm renders it: where helm is, the rendered
documents, and the agent's command line the DaemonSet gives every node. The local world
starts its agents with that command line, so the demo runs the flags a user's install
passes; the chart's tests read the same renders.

helm is found in one place (``helm_binary``): ``$NODEMEDIC_HELM``, else the helm
world/kube/build-kube.sh builds beside the local world's Kubernetes binaries (``make kube``),
which the world needs anyway. The chart is the repository's, where users install it from:
the world reads it from the checkout it runs in (``make demo``, ``pip install -e``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from world.kube.kubeapi import ensure_binaries

CHART = Path(__file__).resolve().parents[2] / "deploy" / "chart" / "nodemedic"
ENV_HELM = "NODEMEDIC_HELM"
NAMESPACE = "nodemedic"
"""Where docs/deploy.md installs the chart, and the namespace of the stack's Pod Identity
association (stacks/agent_access.py)."""


class ChartError(RuntimeError):
    """helm is missing or refused the chart; the message says which, in helm's words."""


def helm_binary() -> Path:
    """helm: ``$NODEMEDIC_HELM`` when set (even if it is not there: a wrong setting fails
    loudly), else the one the Kubernetes build caches, built first when missing."""
    given = os.environ.get(ENV_HELM)
    if given:
        return Path(given)
    return ensure_binaries() / "helm"


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``helm args...`` with its own state kept out of the user's home directory."""
    env = {
        **os.environ,
        "HELM_CACHE_HOME": "/nonexistent/helm-cache",
        "HELM_CONFIG_HOME": "/nonexistent/helm-config",
        "HELM_DATA_HOME": "/nonexistent/helm-data",
    }
    try:
        return subprocess.run(
            [str(helm), *args], capture_output=True, text=True, check=False, env=env, timeout=60
        )
    except OSError as exc:
        raise ChartError(f"helm cannot run ({exc}); `make kube` builds it") from exc


def set_flags(values: Mapping[str, str]) -> list[str]:
    """``--set`` flags, typed as helm types what a user types: ``false`` is a boolean."""
    return [flag for key, value in values.items() for flag in ("--set", f"{key}={value}")]


def render(
    helm: Path,
    values: Mapping[str, str],
    *,
    json_values: Mapping[str, Any] | None = None,
    namespace: str = NAMESPACE,
    extra: Sequence[str] = (),
) -> str:
    """``helm template`` of the chart into ``namespace``, with ``values`` (``--set``) and
    ``json_values`` (``--set-json``); ChartError with helm's words when it refuses."""
    if not CHART.is_dir():
        raise ChartError(f"no chart at {CHART}: the local world runs from a checkout")
    json_flags = [
        flag
        for key, value in (json_values or {}).items()
        for flag in ("--set-json", f"{key}={json.dumps(value)}")
    ]
    done = run_helm(
        helm,
        "template",
        "nodemedic",
        str(CHART),
        "--namespace",
        namespace,
        *set_flags(values),
        *json_flags,
        *extra,
    )
    if done.returncode != 0:
        raise ChartError(f"helm template failed:\n{done.stderr}")
    return done.stdout


def documents(rendered_yaml: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(rendered_yaml) if d]


def one(rendered_yaml: str, kind: str) -> dict[str, Any]:
    """The one document of ``kind``."""
    (found,) = [d for d in documents(rendered_yaml) if d["kind"] == kind]
    return found


def agent_container(rendered_yaml: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(rendered_yaml, "DaemonSet")["spec"]["template"]["spec"][
        "containers"
    ]
    (container,) = containers
    return container


def agent_args_from_chart(rendered_yaml: str) -> list[str]:
    """The agent's flags as the chart's DaemonSet passes them: what ``python -m agent`` (the
    image's entrypoint, ``agent.cli.configure_agent``'s parser) gets on every node."""
    args: list[str] = agent_container(rendered_yaml)["args"]
    return list(args)


def agent_env_from_chart(rendered_yaml: str) -> dict[str, str]:
    """The environment the chart's DaemonSet sets for the agent with plain values (those it
    takes from the pod's fields, the node's name among them, the world gives per node)."""
    return {e["name"]: e["value"] for e in agent_container(rendered_yaml)["env"] if "value" in e}
