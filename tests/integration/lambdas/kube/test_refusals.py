"""The API server's refusals on the real kube-apiserver: a failing admission webhook's 500
and an API server that cannot be reached come back as ``KubeUnavailable`` (what the state
machine retries with backoff and jitter), each counted in an EMF line; the op's own answers
are not refusals."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from lambdas.kube.nodes import NodeNotFound
from lambdas.kube.refusals import KubeUnavailable
from nodemedic.contracts.kube import KUBE_UNAVAILABLE
from nodemedic.contracts.metrics import KUBE_REFUSED_METRIC
from tests.integration.lambdas.kube.test_nodes import mark_event
from tests.support.kube import Invoke, Node
from world.aws import emf
from world.kube.kubeapi import LocalCluster, free_ports
from world.kube.shedding import shedding
from world.kube.webhook import REMEDIATOR, failing_webhook

pytestmark = pytest.mark.kube


def refusals_counted(out: str) -> list[str]:
    """The ``Reason`` of each ``KubeRefused`` datapoint in the Lambda's EMF lines, read as
    CloudWatch reads them (``world.aws.emf``)."""
    found = []
    for extraction in filter(None, map(emf.read, out.splitlines())):
        assert extraction.error is None, extraction.reason
        for datum in extraction.data:
            if datum.name == KUBE_REFUSED_METRIC:
                assert datum.values == (1.0,)
                found.append(dict(datum.dimensions)["Reason"])
    return found


def test_a_failing_webhook_is_a_refusal_retried_and_counted_then_the_op_goes_through(
    invoke: Invoke,
    node: Node,
    *,
    cluster: LocalCluster,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert KubeUnavailable.__name__ == KUBE_UNAVAILABLE, "the name the state machine retries"
    with failing_webhook(admin, cluster.workdir / "certs", node.name, refusals=1) as webhook:
        capsys.readouterr()
        with pytest.raises(KubeUnavailable, match=r"^the API server refused \(500\): .*webhook"):
            invoke(mark_event(node.name))
        assert refusals_counted(capsys.readouterr().out) == ["500"]
        assert not core.read_node(node.name).spec.unschedulable

        assert invoke(mark_event(node.name)) == {"node": node.name, "marked": True}

    assert webhook.refused == 1
    assert core.read_node(node.name).spec.unschedulable is True
    assert refusals_counted(capsys.readouterr().out) == []


def test_an_api_server_out_of_reach_is_a_refusal(
    cluster: LocalCluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    invoke: Invoke,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = yaml.safe_load(cluster.remediator_kubeconfig.read_text())
    (port,) = free_ports(1)  # nothing listens on it
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    away = tmp_path / "away.kubeconfig"
    away.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(away))
    capsys.readouterr()

    with pytest.raises(KubeUnavailable, match=r"^the API server refused \(unreachable\)"):
        invoke({"op": "tainted"})
    assert refusals_counted(capsys.readouterr().out) == ["unreachable"]


def test_an_answer_about_the_request_is_not_a_refusal(
    invoke: Invoke, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Node that is not there is the op's answer (a 404), raised as it is, never retried."""
    capsys.readouterr()
    with pytest.raises(NodeNotFound):
        invoke(mark_event("ip-10-0-7-0.ec2.internal"))
    assert refusals_counted(capsys.readouterr().out) == []


def test_priority_and_fairness_shedding_the_remediators_load_is_a_refusal(
    invoke: Invoke,
    new_node: Callable[..., Node],
    *,
    cluster: LocalCluster,
    admin: client.ApiClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The apiserver gives the remediator one request at a time and answers the rest 429.
    One write held by a slow webhook keeps that seat, so the next op is refused."""
    holder, node = new_node(), new_node()
    certs = cluster.workdir / "certs"
    with (
        shedding(admin, REMEDIATOR),
        failing_webhook(admin, certs, holder.name, refusals=1, hang=60) as hook,
        ThreadPoolExecutor(1) as pool,
    ):
        held = pool.submit(invoke, mark_event(holder.name))
        assert hook.hanging.wait(60), "the held write never reached the webhook"
        capsys.readouterr()
        with pytest.raises(KubeUnavailable, match=r"^the API server refused \(429\): "):
            invoke({"op": "node_status", "node": node.name, "boot_id": None})
        assert refusals_counted(capsys.readouterr().out) == ["429"]
        hook.released.set()
        with pytest.raises(KubeUnavailable, match=r"\(500\)"):
            held.result(timeout=60)
    answered = invoke({"op": "node_status", "node": node.name, "boot_id": None})
    assert answered["ready"] is True, "answered once the load is no more shed"
