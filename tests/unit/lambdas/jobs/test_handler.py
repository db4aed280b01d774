"""The job monitor's delivery path for hardware errors in a job's output (the Neuron
runtime's, the fabric's): the pod's Node, as the API places it, gets a Warning Event and the
people a mail, once per node, rule and hour; a deep check is asked for where AWS says the
hardware is bad, and nothing is done to the node itself. The cluster is a stand-in that
answers the calls this path makes (the pod's placement, an Event's create); the job's own
rules are their own tests'."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from lambdas.jobs import handler as jobs
from lambdas.kube.jobs import Job
from tests.support.lambda_context import lambda_context
from tests.support.payloads import delivery

DMA_ABORT = (
    "2024-Mar-04 11:02:17.0402 812:831 ERROR TDRV:exec [MLA 0][NC 2]"
    " DMA TX engine 0 is in an abort state"
)
COLLECTIVES = (
    "(FATAL-RT-UNDEFINED-STATE) missing collectives status on Neuron Device 0 NC 0, model 0"
)
JOB = Job("ml-team", "llama", "uid-llama", {}, 0.0, False)


@dataclass
class FakeCore:
    """Events as the API server keeps them: a second create of one name is a 409."""

    events: dict[str, dict[str, Any]] = field(default_factory=dict)

    def create_namespaced_event(self, namespace: str, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        if name in self.events:
            raise client.ApiException(status=409, reason="AlreadyExists")
        self.events[name] = {"namespace": namespace, **body}


@dataclass
class World:
    core: FakeCore
    mails: list[tuple[str, str]]
    nodes: dict[str, str | None]
    """Pod name → the Node it runs on (None: not scheduled)."""


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    core, mails = FakeCore(), []
    nodes: dict[str, str | None] = {"llama-0": "ip-10-0-1-17", "llama-1": None}
    cluster = SimpleNamespace(core=core, batch=None, notify=lambda *m: mails.append(m))
    monkeypatch.setattr(jobs, "env", lambda: SimpleNamespace(cluster="demo", ledger_table="t"))
    monkeypatch.setattr(jobs, "_store", lambda table: SimpleNamespace(heard=lambda *_: None))
    monkeypatch.setattr(jobs, "_cluster", lambda *_: cluster)
    monkeypatch.setattr(jobs, "placement", lambda _core, _ns, pod: (JOB, nodes[pod]))
    monkeypatch.setattr(jobs, "record_checkpoint", lambda *_: None)
    monkeypatch.setattr(jobs, "monitor", lambda *_: None)
    return World(core, mails, nodes)


def _deliver(pod: str, lines: list[str]) -> dict[str, Any]:
    context = lambda_context("jobs", memory_mb=256, timeout_seconds=60)
    result: dict[str, Any] = jobs.handler(delivery("ml-team", "llama", pod, lines), context)
    return result


def _told(rule: str, action: str) -> dict[str, str]:
    """The handler's ``node_evidence`` entry for llama-0's node."""
    return {
        "node": "ip-10-0-1-17",
        "job": "ml-team/llama",
        "pod": "ml-team/llama-0",
        "rule": rule,
        "action": action,
    }


def test_a_dma_abort_in_a_jobs_output_asks_for_its_nodes_deep_check_once(world: World) -> None:
    first = _deliver("llama-0", ["step 1", DMA_ABORT, DMA_ABORT])
    assert first["node_evidence"] == [_told("neuron-rt-dma-abort", "deep-check")]
    (event,) = world.core.events.values()
    assert event["namespace"] == "default"
    assert event["involvedObject"]["kind"] == "Node"
    assert event["involvedObject"]["name"] == "ip-10-0-1-17"
    assert (event["reason"], event["type"]) == ("NodeMedicDeepCheckRequested", "Warning")
    assert "DMA TX engine 0 is in an abort state" in event["message"]
    ((subject, body),) = world.mails
    assert "NodeMedicDeepCheckRequested on ip-10-0-1-17" in subject
    assert "nodemedic agent --deep-check" in body and "replace the instance" in body
    # Every rank prints it, and a batch may come twice: told once this hour.
    again = _deliver("llama-0", [DMA_ABORT])
    assert again["node_evidence"] == [] and len(world.mails) == 1


def test_an_error_aws_places_on_another_worker_is_only_notified(world: World) -> None:
    result = _deliver("llama-0", [COLLECTIVES])
    assert [e["action"] for e in result["node_evidence"]] == ["notify"]
    (event,) = world.core.events.values()
    assert event["reason"] == "NodeMedicJobReportedHardwareError"
    ((_subject, body),) = world.mails
    assert "--deep-check" not in body


def test_healthy_lines_and_unscheduled_pods_tell_nothing(world: World) -> None:
    assert _deliver("llama-0", ["epoch 1 step 2 training_loss_step 1.5"])["node_evidence"] == []
    assert _deliver("llama-1", [DMA_ABORT])["node_evidence"] == []
    assert world.core.events == {} and world.mails == []


def test_a_fabric_error_nccl_prints_is_told_about_the_node_with_its_advice(world: World) -> None:
    """NCCL's exhausted retry names a path that may fail at either end: told, never more."""
    line = (
        "node7:3917:4102 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from"
        " peer 10.1.22.87<48221> with error 12, opcode 0, len 0, vendor err 129 (Send)"
    )
    result = _deliver("llama-0", ["step 9", line])
    assert result["node_evidence"] == [_told("nccl-ib-retry-exceeded", "notify")]
    (event,) = world.core.events.values()
    assert event["reason"] == "NodeMedicJobReportedHardwareError"
    ((_subject, body),) = world.mails
    assert "10.1.22.87<48221>" in body and "the peer named in the line" in body
    assert "--deep-check" not in body
