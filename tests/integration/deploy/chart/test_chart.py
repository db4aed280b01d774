"""The chart (deploy/chart/nodemedic) as a real helm renders it: it lints, renders for EKS
Pod Identity and for IRSA with a ServiceMonitor, gives the agent what it needs on a node and
no more, passes the agent flags its own parser accepts, and binds the kube Lambda's group to
exactly the rules of lambdas/kube/rbac.yaml."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.cli import agent_config, configure_agent
from agent.flags import DEFAULT_METRICS_PORT
from agent.metrics import LIVENESS_PATH
from nodemedic.contracts.kube import (
    HEALTH_LABEL,
    JOB_MONITOR_GROUP,
    NODE_USER_PREFIX,
    PENDING_STATUSES,
    REMEDIATOR_GROUP,
    REQUESTED_BY_ANNOTATION,
)
from nodemedic.contracts.release import VERSION
from nodemedic.health.instance_types import TABLE
from tests.support.admission import LABEL_POLICY, named
from tests.support.helm import ANY_ADDRESS, REQUIRED, SCRAPED, render
from tests.support.paths import ROOT
from world import deepcheck
from world.agents import AgentFleet, AgentSettings, Boot, PodDevices, chart_values, extra_args
from world.kube.chart import (
    CHART,
    NAMESPACE,
    agent_args_from_chart,
    agent_container,
    agent_env_from_chart,
    documents,
    one,
    run_helm,
    set_flags,
)

IRSA_ROLE = "arn:aws:iam::123456789012:role/nodemedic-agent-prod-trn"


@pytest.fixture(scope="module")
def with_jobs(helm: Path) -> str:
    """A cluster with the setting job_monitoring on, which installs its role too."""
    return render(helm, {**REQUIRED, "jobMonitorRBAC.create": "true"})


@pytest.fixture(scope="module")
def irsa_scraped(helm: Path) -> str:
    return render(
        helm,
        SCRAPED,
        json_values={"serviceAccount.annotations": {"eks.amazonaws.com/role-arn": IRSA_ROLE}},
    )


def pod_spec(rendered: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(rendered, "DaemonSet")["spec"]["template"]["spec"]
    return spec


class StrictParser(argparse.ArgumentParser):
    """The agent's parser, failing the test (not exiting) on a flag it does not know."""

    def error(self, message: str) -> Any:
        raise AssertionError(f"python -m agent refuses the chart's arguments: {message}")


def parse_agent_args(args: list[str]) -> argparse.Namespace:
    parser = StrictParser(prog="python -m agent")
    configure_agent(parser)
    return parser.parse_args(args)


def constants_of(path: Path) -> dict[str, Any]:
    """A module's top-level ``NAME = <literal>`` assignments, read without importing it."""
    found: dict[str, Any] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def test_the_chart_lints_and_refuses_to_render_without_a_cluster_or_an_image(helm: Path) -> None:
    linted = run_helm(helm, "lint", "--strict", str(CHART), *set_flags(REQUIRED))
    assert linted.returncode == 0, linted.stdout + linted.stderr
    for missing in REQUIRED:
        given = {k: v for k, v in REQUIRED.items() if k != missing}
        refused = run_helm(helm, "template", "nodemedic", str(CHART), *set_flags(given))
        assert refused.returncode != 0
        assert f"{missing} is required" in refused.stderr


def test_defaults_render_the_agent_for_pod_identity_and_the_remediator_rbac(default: str) -> None:
    kinds = sorted(d["kind"] for d in documents(default))
    assert kinds == [
        # The remediator's role; the job monitor's only with job_monitoring (off by default).
        *["ClusterRole", "ClusterRoleBinding", "DaemonSet", "ServiceAccount"],
        *["ValidatingAdmissionPolicy"] * 2,
        *["ValidatingAdmissionPolicyBinding"] * 2,
    ]
    account = one(default, "ServiceAccount")
    # EKS Pod Identity: the association names the account; nothing on the account itself.
    assert "annotations" not in account["metadata"]
    assert account["automountServiceAccountToken"] is False
    # Where the stack's Pod Identity association looks (stacks/agent_access.py).
    stack = constants_of(ROOT / "stacks" / "agent_access.py")
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (
        stack["AGENT_NAMESPACE"],
        stack["AGENT_SERVICE_ACCOUNT"],
    )
    assert stack["AGENT_NAMESPACE"] == NAMESPACE
    assert pod_spec(default)["serviceAccountName"] == account["metadata"]["name"]
    assert one(default, "DaemonSet")["metadata"]["namespace"] == NAMESPACE
    # The image defaults to the agent's own version.
    version = VERSION
    assert agent_container(default)["image"] == f"{REQUIRED['image.repository']}:{version}"
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"] == version


def test_irsa_and_a_service_monitor_render_on_request(irsa_scraped: str, helm: Path) -> None:
    account = one(irsa_scraped, "ServiceAccount")
    assert account["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": IRSA_ROLE}
    container = agent_container(irsa_scraped)
    (port,) = container["ports"]
    service, monitor = one(irsa_scraped, "Service"), one(irsa_scraped, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert service["spec"]["clusterIP"] == "None"
    assert (
        service["spec"]["selector"]
        == one(irsa_scraped, "DaemonSet")["spec"]["selector"]["matchLabels"]
    )
    assert service["spec"]["ports"] == [
        {
            "name": "metrics",
            "port": port["containerPort"],
            "targetPort": port["name"],
            "protocol": "TCP",
        }
    ]
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert f"--metrics-address={ANY_ADDRESS}" in container["args"]
    # A ServiceMonitor over an endpoint on the node's loopback would scrape nothing.
    refused = run_helm(
        helm,
        "template",
        "nodemedic",
        str(CHART),
        *set_flags({**REQUIRED, "serviceMonitor.enabled": "true"}),
    )
    assert refused.returncode != 0 and "agent.metrics.address" in refused.stderr


def test_the_agent_gets_the_host_paths_and_privileges_it_needs_and_no_more(default: str) -> None:
    pod = pod_spec(default)
    container = agent_container(default)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    assert volumes == {
        "kmsg": {"path": "/dev/kmsg", "type": "CharDevice"},
        "sys": {"path": "/sys", "type": "Directory"},
        "pstore": {"path": "/sys/fs/pstore", "type": "Directory"},
        "state": {"path": "/var/lib/nodemedic", "type": "DirectoryOrCreate"},
    }
    assert set(mounts) == set(volumes), "no other host path"
    assert all(mounts[name]["readOnly"] for name in ("kmsg", "sys", "pstore"))
    assert not mounts["state"].get("readOnly")
    args = parse_agent_args(agent_args_from_chart(default))
    # The flags point where the host paths are mounted.
    assert args.kmsg == mounts["kmsg"]["mountPath"]
    assert str(args.sys_root) == mounts["sys"]["mountPath"]
    assert str(args.pstore_dir) == mounts["pstore"]["mountPath"]
    assert str(args.state_dir) == mounts["state"]["mountPath"]
    security = container["securityContext"]
    # privileged for the devices (/dev/kmsg is outside the runtimes' device allowlist); of
    # the capabilities, the agent's code needs SYSLOG only.
    assert security["privileged"] is True
    assert security["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}
    assert security["readOnlyRootFilesystem"] is True
    assert not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod["hostNetwork"] is True  # IMDSv2 within its hop limit
    # Requests as the EKS node monitoring agent's (10m, 30Mi) where the agent measures so;
    # a memory limit with room for the tools the checks run; no CPU quota.
    assert container["resources"] == {
        "requests": {"cpu": "10m", "memory": "40Mi"},
        "limits": {"memory": "256Mi"},
    }
    resources = json.dumps(container["resources"])
    assert "nvidia.com/gpu" not in resources, "must not take a GPU"
    assert "neuron" not in resources, "nor a Neuron device"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"  # nvidia-smi without taking a GPU
    assert env["GRPC_ENABLE_FORK_SUPPORT"] == "0"  # the agent forks only to exec its tools
    probe = container["livenessProbe"]["httpGet"]
    # The probe asks whether the agent's loops turn (agent.liveness), on its metrics port.
    assert (probe["path"], probe["port"]) == (LIVENESS_PATH, DEFAULT_METRICS_PORT)
    assert args.metrics_port == DEFAULT_METRICS_PORT
    assert pod["priorityClassName"] == "system-node-critical"


def test_pstore_can_be_left_out_for_kernels_without_it(helm: Path) -> None:
    rendered = render(helm, {**REQUIRED, "hostPaths.pstore": ""})
    assert "pstore" not in {v["name"] for v in pod_spec(rendered)["volumes"]}
    assert not any(a.startswith("--pstore-dir") for a in agent_args_from_chart(rendered))


def test_runs_on_accelerator_nodes_only_and_stays_on_tainted_and_cordoned_ones(
    default: str,
) -> None:
    pod = pod_spec(default)
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expressions = {
        e["key"]: e for term in terms["nodeSelectorTerms"] for e in term["matchExpressions"]
    }
    assert {
        "nvidia.com/gpu.present",
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-accelerator-count",  # Neuron (Trainium, Inferentia)
        "node.kubernetes.io/instance-type",
        "nodemedic.io/agent",
    } == set(expressions)
    # Every EC2 type with GPUs or Neuron devices the agent knows of, and no other.
    table = json.loads(TABLE.read_text())["types"]
    accelerated = {
        name
        for name, devices in table.items()
        if devices.get("gpus") or devices.get("neuron_devices")
    }
    assert set(expressions["node.kubernetes.io/instance-type"]["values"]) == accelerated
    assert {"p5.48xlarge", "trn2.48xlarge", "inf2.48xlarge"} <= accelerated
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}


def test_the_agents_own_parser_accepts_the_charts_arguments(default: str, helm: Path) -> None:
    args = parse_agent_args(agent_args_from_chart(default))
    assert args.cluster == REQUIRED["cluster"]
    assert args.deep_check_at_start is True  # post_reboot_deep_check relies on it
    assert args.metrics_address == "127.0.0.1"
    assert args.log_level == "INFO"
    assert (args.dcgm_names, args.metric_prefix) == (True, "")
    assert args.pod_devices is False
    # ... and the agent's configuration is built from them as on a node.
    config = agent_config(args, "i-0123456789abcdef0", "us-east-1", "boot")
    assert config.deep_check_at_start and config.cluster == REQUIRED["cluster"]
    assert config.sign is True
    changed = render(
        helm,
        {
            **REQUIRED,
            "agent.deepCheckAtStart": "false",
            "agent.logLevel": "DEBUG",
            "agent.metrics.dcgmNames": "false",
            "agent.metrics.metricPrefix": "nodemedic_",
            "agent.neuronMonitorMetrics": "http://127.0.0.1:8000/metrics",
            "agent.podDevices.enabled": "true",
        },
        json_values={"agent.extraArgs": ["--telemetry-emf", "--check-interval=120"]},
    )
    args = parse_agent_args(agent_args_from_chart(changed))
    assert (args.deep_check_at_start, args.telemetry_emf, args.check_interval) == (
        False,
        True,
        120.0,
    )
    assert args.log_level == "DEBUG"
    assert (args.dcgm_names, args.metric_prefix) == (False, "nodemedic_")
    assert args.neuron_monitor_metrics == "http://127.0.0.1:8000/metrics"
    # Kubernetes puts the node's name in for $(NODE_NAME) (the downward API).
    assert (args.pod_devices, args.node_name) == (True, "$(NODE_NAME)")
    assert args.pod_resources_socket == "/var/lib/kubelet/pod-resources/kubelet.sock"


def _rbac(rendered: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (d["kind"], d["metadata"]["name"]): d
        for d in documents(rendered)
        if d["kind"] in {"ClusterRole", "ClusterRoleBinding"}
    }


def test_the_remediator_and_job_monitor_rbac_is_lambdas_kube_rbac_yaml(
    default: str, with_jobs: str, helm: Path
) -> None:
    shipped = {
        (d["kind"], d["metadata"]["name"]): d
        for d in yaml.safe_load_all((ROOT / "lambdas/kube/rbac.yaml").read_text())
    }
    rendered = _rbac(with_jobs)
    for key, document in rendered.items():
        document["metadata"].pop("labels")
        assert document == shipped[key], key
    assert set(rendered) == set(shipped)
    groups = {
        name: subject["name"]
        for (kind, name), document in rendered.items()
        if kind == "ClusterRoleBinding"
        for subject in document["subjects"]
    }
    assert groups == {
        "nodemedic-remediator": REMEDIATOR_GROUP,
        "nodemedic-job-monitor": JOB_MONITOR_GROUP,
    }
    # A role for a feature that is off is not installed: the job monitor's pod delete
    # only with job_monitoring.
    assert {n for _, n in _rbac(default)} == {n for _, n in shipped} - {"nodemedic-job-monitor"}
    without = render(helm, {**REQUIRED, "remediatorRBAC.create": "false"})
    assert not _rbac(without)


def test_the_label_request_policy_speaks_the_contracts_names_and_can_be_left_out(
    default: str, helm: Path
) -> None:
    """Its rules are CEL text: a renamed label, annotation or group must fail here, not
    silently admit everything (its behaviour:
    tests/integration/lambdas/kube/test_label_policy.py)."""
    policy, binding = named(documents(default), LABEL_POLICY)
    text = json.dumps(policy["spec"])
    for name in (HEALTH_LABEL, REQUESTED_BY_ANNOTATION, REMEDIATOR_GROUP, NODE_USER_PREFIX):
        assert name in text, name
    assert all(status in text for status in PENDING_STATUSES)
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    without = render(helm, {**REQUIRED, "labelRequests.policy": "false"})
    assert not named(documents(without), LABEL_POLICY)


def test_scrape_annotations_point_at_the_agents_port_only_where_it_can_be_reached(
    default: str, irsa_scraped: str
) -> None:
    """A pod-discovering Prometheus would see a target down on every node if the annotations
    pointed at the node's loopback, the default address."""
    assert "annotations" not in one(default, "DaemonSet")["spec"]["template"]["metadata"]
    template = one(irsa_scraped, "DaemonSet")["spec"]["template"]
    args = parse_agent_args(agent_args_from_chart(irsa_scraped))
    assert template["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(args.metrics_port),
        "prometheus.io/path": "/metrics",
    }
    assert agent_container(default)["ports"] == [
        {"name": "metrics", "containerPort": args.metrics_port, "protocol": "TCP"}
    ]


NODE_OWN = {"instance_id", "kmsg", "boot_id", "state_dir"}
"""What the local world gives each simulated node's agent after the chart's flags: what a
real node's agent finds on its node (docs/contracts.md, "The local world's agents")."""
DEEP_CHECK_RUN = {"all_reduce_perf", "min_busbw"}
"""The simulated node's NCCL all-reduce (``world.deepcheck.agent_args``)."""
WORLD_VALUES = {
    "cluster",
    "image.repository",
    "agent.logLevel",
    "agent.metrics.port",
    "agent.deepCheckAtStart",
    "agent.podDevices.enabled",
}
"""The values the world sets with ``--set``, as docs/contracts.md lists them."""
NODE_DEVICES = {"node_name", "pod_resources_socket", "kube_credentials"}
"""Where the agents publish their Node's device record: its name (the downward API on a
node), the kubelet's socket (the hostPath) and the service account's mount."""


@pytest.mark.parametrize(("deep_checks", "devices"), [(False, False), (True, True)])
def test_the_local_worlds_agents_run_the_charts_flags_and_only_their_nodes_own(
    helm: Path, tmp_path: Path, *, deep_checks: bool, devices: bool
) -> None:
    publishing = PodDevices(
        "https://127.0.0.1:6443", lambda node: tmp_path / f"{node}.sock", lambda *_: None
    )
    settings = AgentSettings(
        cluster="demo",
        region="us-east-1",
        endpoint_url="http://127.0.0.1:4566",
        workdir=tmp_path,
        deep_check_at_start=deep_checks,
        pod_devices=publishing if devices else None,
    )
    fleet = AgentFleet(settings)
    try:
        extra = deepcheck.agent_args("pass") if deep_checks else []
        boot = Boot("i-0a1b2c3d4e5f60718", "b0", "ip-10-0-0-1.ec2.internal")
        argv = fleet.argv(boot, tmp_path / "kmsg", tmp_path / "n", extra)
    finally:
        fleet.close()
    assert set(chart_values(settings)) == WORLD_VALUES
    # What a user who sets the world's values gets on every node.
    installed = agent_args_from_chart(
        render(helm, chart_values(settings), json_values={"agent.extraArgs": extra_args(settings)})
    )
    assert argv[:4] == [sys.executable, "-m", "console.cli", "agent"]
    assert argv[4 : 4 + len(installed)] == installed
    world, chart = vars(parse_agent_args(argv[4:])), vars(parse_agent_args(installed))
    changed = {flag for flag, value in world.items() if chart[flag] != value}
    assert changed == (
        NODE_OWN | (DEEP_CHECK_RUN if deep_checks else set()) | (NODE_DEVICES if devices else set())
    )
    assert world["pod_devices"] is devices
    assert world["deep_check_at_start"] is deep_checks


def test_the_worlds_agents_get_the_charts_plain_environment(helm: Path) -> None:
    """The local world runs each agent with what the DaemonSet sets: gRPC's fork handlers
    off however the demo is started; the node's name comes from the pod, per node."""
    environment = agent_env_from_chart(render(helm, REQUIRED))

    assert environment["GRPC_ENABLE_FORK_SUPPORT"] == "0"
    assert "NODE_NAME" not in environment
