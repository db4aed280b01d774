"""Karpenter's repair gates read as Karpenter reads them (a gate list's flag over its
variable over the default, off), and what the census answers and warns of with them."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from kubernetes import client

from lambdas.kube.census import count_nodes
from lambdas.kube.karpenter_repair import KARPENTER_DEPLOYMENT, gates_on

IN_KUBE_SYSTEM = f"kube-system/{KARPENTER_DEPLOYMENT}"
IN_KARPENTER = f"karpenter/{KARPENTER_DEPLOYMENT}"


def _env(core: str | None = None, aws: str | None = None) -> dict[str, str]:
    """A container's variables: the core's gate list and the AWS provider's, where set."""
    lists = {"FEATURE_GATES": core, "AWS_FEATURE_GATES": aws}
    return {name: value for name, value in lists.items() if value is not None}


@pytest.mark.parametrize(
    ("args", "env", "on"),
    [
        ([], None, False),  # Karpenter's default
        ([], "NodeRepair=true", True),  # its Helm chart's settings.featureGates.nodeRepair
        ([], "SpotToSpotConsolidation=true, NodeRepair=True", True),
        ([], "NodeRepair=false", False),
        ([], "NodeRepair=true,NodeRepair=false", False),  # the last setting wins
        (["--feature-gates=NodeRepair=true"], None, True),
        (["--feature-gates", "NodeRepair=1"], None, True),
        (["-feature-gates=NodeRepair=t"], None, True),  # Go's flags take one dash too
        (["--feature-gates=NodeRepair=false"], "NodeRepair=true", False),  # the flag wins
        (["--feature-gates=ReservedCapacity=true"], "NodeRepair=true", False),
        (["--log-level=debug"], "NodeRepair=true", True),
        ([], "NodeRepairs=true", False),
    ],
)
def test_node_repair_is_read_as_karpenter_reads_it(
    args: list[str], env: str | None, on: bool
) -> None:
    assert ("NodeRepair" in gates_on(args, _env(core=env))) is on


@pytest.mark.parametrize(
    ("args", "env", "on"),
    [
        ([], _env(), False),  # the AWS provider's default
        ([], _env(aws="RebootForRepair=true"), True),
        ([], _env(aws="NodeClassCEL=false, RebootForRepair=True"), True),
        ([], _env(aws="RebootForRepair=true,RebootForRepair=false"), False),  # the last wins
        ([], _env(aws="RebootForRepair=false,RebootForRepair=1"), True),
        (["--aws-feature-gates=RebootForRepair=true"], _env(), True),
        (["--aws-feature-gates", "RebootForRepair=t"], _env(), True),
        (["-aws-feature-gates=RebootForRepair=true"], _env(), True),
        # The flag wins over the variable, whatever either says, and the last flag wins.
        (["--aws-feature-gates=RebootForRepair=false"], _env(aws="RebootForRepair=true"), False),
        (["--aws-feature-gates=RebootForRepair=true"], _env(aws="RebootForRepair=false"), True),
        (["--aws-feature-gates=NodeClassCEL=true"], _env(aws="RebootForRepair=true"), False),
        (
            ["--aws-feature-gates=RebootForRepair=true", "--aws-feature-gates=DRAEFA=true"],
            _env(),
            False,
        ),
        # Each list is its own: the core's does not set the provider's gate, nor the reverse.
        ([], _env(core="RebootForRepair=true"), False),
        (["--feature-gates=RebootForRepair=true"], _env(), False),
        (["--aws-feature-gates=RebootForRepair=true"], _env(core="RebootForRepair=false"), True),
    ],
)
def test_reboot_for_repair_is_read_from_the_aws_providers_own_list(
    args: list[str], env: dict[str, str], on: bool
) -> None:
    assert ("RebootForRepair" in gates_on(args, env)) is on


def test_the_gates_are_named_in_one_order_whatever_sets_them() -> None:
    args = ["--aws-feature-gates=RebootForRepair=true"]
    assert gates_on(args, _env(core="NodeRepair=true")) == ["NodeRepair", "RebootForRepair"]


Deployments = Callable[[dict[str, dict[str, str]]], None]


@pytest.fixture
def deployments(monkeypatch: pytest.MonkeyPatch) -> Deployments:
    """The census against a cluster without Nodes whose Karpenter Deployments are the given
    ones: namespace -> its controller's variables; another namespace has none (404)."""

    def install(envs: dict[str, dict[str, str]]) -> None:
        def read(name: str, namespace: str) -> client.V1Deployment:
            if name != KARPENTER_DEPLOYMENT or namespace not in envs:
                raise client.ApiException(status=404)
            env = [client.V1EnvVar(name=k, value=v) for k, v in envs[namespace].items()]
            container = client.V1Container(name="controller", env=env)
            template = client.V1PodTemplateSpec(spec=client.V1PodSpec(containers=[container]))
            return client.V1Deployment(
                spec=client.V1DeploymentSpec(selector=client.V1LabelSelector(), template=template)
            )

        apps = type("Apps", (), {"read_namespaced_deployment": staticmethod(read)})
        monkeypatch.setattr(client, "AppsV1Api", lambda api: apps())

    return install


class _NoNodes:
    api_client = None

    def list_node(self, **_: object) -> client.V1NodeList:
        return client.V1NodeList(items=[], metadata=client.V1ListMeta())


def _census() -> dict[str, object]:
    return count_nodes(_NoNodes(), "demo")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_the_census_names_each_karpenters_repair_gates_and_warns_of_its_reboots(
    deployments: Deployments, caplog: pytest.LogCaptureFixture
) -> None:
    both = _env(core="NodeRepair=true", aws="NodeClassCEL=true,RebootForRepair=true")
    deployments({"kube-system": both, "karpenter": _env(core="ReservedCapacity=true")})

    answer = _census()

    assert answer["karpenter_repair_gates"] == {
        IN_KUBE_SYSTEM: ["NodeRepair", "RebootForRepair"],
        IN_KARPENTER: [],
    }
    assert answer["karpenter_node_repair"] == [IN_KUBE_SYSTEM]
    (warning,) = _warnings(caplog)
    assert "NodeRepair feature gate is on, with RebootForRepair" in warning
    assert "reboots or replaces" in warning


def test_the_census_warns_of_replacements_alone_without_reboot_for_repair(
    deployments: Deployments, caplog: pytest.LogCaptureFixture
) -> None:
    deployments({"kube-system": _env(core="NodeRepair=true", aws="RebootForRepair=false")})

    answer = _census()

    assert answer["karpenter_repair_gates"] == {IN_KUBE_SYSTEM: ["NodeRepair"]}
    (warning,) = _warnings(caplog)
    assert "Karpenter replaces unhealthy nodes" in warning
    assert "RebootForRepair" not in warning


def test_reboot_for_repair_without_node_repair_is_reported_but_not_warned_of(
    deployments: Deployments, caplog: pytest.LogCaptureFixture
) -> None:
    """Reboot is one of node repair's actions: without NodeRepair, Karpenter repairs nothing."""
    deployments({"karpenter": _env(aws="RebootForRepair=true")})

    answer = _census()

    assert answer["karpenter_repair_gates"] == {IN_KARPENTER: ["RebootForRepair"]}
    assert answer["karpenter_node_repair"] == []
    assert _warnings(caplog) == []


def test_the_census_without_karpenter_reports_no_gates(
    deployments: Deployments, caplog: pytest.LogCaptureFixture
) -> None:
    deployments({})
    answer = _census()
    assert (answer["karpenter_repair_gates"], answer["karpenter_node_repair"]) == ({}, [])
    assert _warnings(caplog) == []
