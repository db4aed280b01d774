"""The ``deep_check`` op against the real API server: a verdict on a registering node, and
on a rebooted node the ``hold_for_deep_check`` op is about to hold."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client
from moto import mock_aws

from lambdas.kube.handler import BadRequest
from nodemedic.contracts.env import ENV_LEDGER_TABLE
from nodemedic.contracts.kube import (
    CORDONED_ANNOTATION,
    DEEP_CHECK_HELD_ANNOTATION,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    FAULT_TYPE_LABEL,
    HEALTH_LABEL,
    SCHEDULABLE,
    TAINT_KEY,
    UNSCHEDULABLE,
)
from tests.support.kube import Invoke, Node
from tests.support.tables import create_ledger_table

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("ledger")]


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ledger the gate ops keep their record in, on moto."""
    monkeypatch.setenv(ENV_LEDGER_TABLE, "ledger")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        create_ledger_table("ledger")
        yield


USER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CHECKING = {"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}
REGISTERING = {HEALTH_LABEL: UNSCHEDULABLE, DEEP_CHECK_LABEL: "InProgress"}


def _registered(core: client.CoreV1Api, node: Node, *taints: dict[str, str]) -> None:
    core.patch_node(
        node.name, {"metadata": {"labels": REGISTERING}, "spec": {"taints": list(taints)}}
    )


REMEDIATING = {"key": TAINT_KEY, "value": "nvidia-xid-48", "effect": "NoSchedule"}


def _at(seconds_from_now: float = 0) -> str:
    return (
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds_from_now)
    ).isoformat()


def _answer(
    node: Node, *, changed: bool, uncordoned: bool = False, kept_cordon: bool = False
) -> dict[str, object]:
    """The op's answer on ``node`` to a verdict it did not refuse."""
    return {
        "node": node.name,
        "changed": changed,
        "uncordoned": uncordoned,
        "kept_cordon": kept_cordon,
        "refused": None,
    }


def _verdict(node: Node, verdict: str, at: str | None = None) -> dict[str, object]:
    return {
        "op": "deep_check",
        "instance_id": node.instance_id,
        "verdict": verdict,
        "at": at or _at(),
    }


def test_a_pass_takes_the_health_check_taint_off_and_labels_the_node_schedulable(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    _registered(core, node, CHECKING, USER_TAINT)

    assert invoke(_verdict(node, "Passed")) == _answer(node, changed=True)

    seen = core.read_node(node.name)
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert seen.metadata.labels[HEALTH_LABEL] == "Schedulable"


@pytest.mark.parametrize(
    "taints",
    [
        # Let in before (by an operator, or an earlier pass): a pass changes nothing.
        [USER_TAINT],
        # In remediation: a pass never gives back a node nodemedic took out.
        [CHECKING, {"key": TAINT_KEY, "value": "nvidia-xid-79", "effect": "NoSchedule"}],
    ],
)
def test_a_pass_leaves_a_node_not_waiting_for_it_as_it_is(
    invoke: Invoke, node: Node, core: client.CoreV1Api, taints: list[dict[str, str]]
) -> None:
    _registered(core, node, *taints)
    core.patch_node(node.name, {"spec": {"unschedulable": True}})
    before = core.read_node(node.name)

    assert invoke(_verdict(node, "Passed")) == _answer(node, changed=False)

    seen = core.read_node(node.name)
    assert seen.spec.taints == before.spec.taints and seen.spec.unschedulable is True
    assert seen.metadata.labels == before.metadata.labels


def test_a_failure_labels_the_node_failed_and_keeps_it_out(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    _registered(core, node, CHECKING)

    invoke(_verdict(node, "Failed"))

    seen = core.read_node(node.name)
    assert [t.key for t in seen.spec.taints] == [DEEP_CHECK_TAINT_KEY]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Failed"
    assert seen.metadata.labels[HEALTH_LABEL] == UNSCHEDULABLE


def test_a_verdict_other_than_passed_or_failed_is_refused(
    invoke: Invoke, new_node: Callable[..., Node]
) -> None:
    with pytest.raises(BadRequest, match="field 'verdict'"):
        invoke(_verdict(new_node(), "NothingChecked"))


def _rebooting(core: client.CoreV1Api, node: Node) -> None:
    """As a reboot's remediation leaves the node until it is back: marked and cordoned (by
    nodemedic: it was schedulable)."""
    core.patch_node(
        node.name,
        {
            "metadata": {
                "labels": {FAULT_TYPE_LABEL: "nvidia-xid-48"},
                "annotations": {CORDONED_ANNOTATION: "true"},
            },
            "spec": {"unschedulable": True, "taints": [REMEDIATING, USER_TAINT]},
        },
    )


def _hold(node: Node, rebooted_at: str) -> dict[str, object]:
    return {
        "op": "hold_for_deep_check",
        "node": node.name,
        "fault_id": "nvidia-xid-48",
        "condition": "AcceleratedHardwareReady",
        "decision_id": "i-0-xid-48",
        "rebooted_at": rebooted_at,
    }


def test_a_pass_logged_after_the_reboot_but_before_the_hold_gives_the_node_back(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """The agent's check after the boot can pass before the reboot's watch sees the node
    back: the hold must not then wait for a verdict already given."""
    _rebooting(core, node)
    rebooted_at = _at(-30)
    passed = invoke(_verdict(node, "Passed", at=_at(-5)))
    assert passed["changed"] is False  # under remediation: it admits nothing itself

    answer = invoke(_hold(node, rebooted_at))

    assert answer["held"] is False
    seen = core.read_node(node.name)
    assert not seen.spec.unschedulable
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert seen.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    assert FAULT_TYPE_LABEL not in seen.metadata.labels
    assert DEEP_CHECK_HELD_ANNOTATION not in (seen.metadata.annotations or {})


def test_a_pass_logged_before_the_reboot_does_not_spare_the_node_its_check(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    _rebooting(core, node)
    invoke(_verdict(node, "Passed", at=_at(-60)))

    answer = invoke(_hold(node, _at(-30)))

    assert answer["held"] is True
    seen = core.read_node(node.name)
    assert seen.spec.unschedulable
    assert sorted(t.key for t in seen.spec.taints) == [DEEP_CHECK_TAINT_KEY, "nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    assert seen.metadata.annotations[DEEP_CHECK_HELD_ANNOTATION] == "i-0-xid-48"


def test_a_pass_time_the_node_writes_on_itself_does_not_spare_it_its_check(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """The node's own credential may write its annotations: a pass time it sets there (in
    2099) is no pass."""
    _rebooting(core, node)
    core.patch_node(
        node.name,
        {
            "metadata": {
                "annotations": {"nodemedic.io/deep-check-passed-at": "2099-01-01T00:00:00+00:00"}
            }
        },
    )

    answer = invoke(_hold(node, _at(-30)))

    assert answer["held"] is True
    seen = core.read_node(node.name)
    assert seen.spec.unschedulable
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"


def test_a_pass_admitted_under_a_lock_keeps_the_hold_s_cordon_until_asked_with_release(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """The pass's execution may read the node's lock before the reboot noted its give-back,
    and admit the node after the reboot held it: the admission keeps the hold's cordon and
    says so. The same pass asked again with ``release_hold`` lifts that cordon alone."""
    _rebooting(core, node)
    assert invoke(_hold(node, _at(-30)))["held"] is True

    kept = invoke(_verdict(node, "Passed"))

    assert kept == _answer(node, changed=True, kept_cordon=True)
    seen = core.read_node(node.name)
    assert seen.spec.unschedulable
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert invoke(_verdict(node, "Passed"))["changed"] is False
    assert core.read_node(node.name).spec.unschedulable

    lifted = invoke(_verdict(node, "Passed") | {"release_hold": True})

    assert lifted == _answer(node, changed=True, uncordoned=True)
    seen = core.read_node(node.name)
    assert not seen.spec.unschedulable
    assert DEEP_CHECK_HELD_ANNOTATION not in (seen.metadata.annotations or {})
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Passed"


def test_a_pass_logged_before_the_hold_began_does_not_admit_the_held_node(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """A pass line a day older than the hold (a replay, or one held back) lifts nothing."""
    _rebooting(core, node)
    assert invoke(_hold(node, _at(-30)))["held"] is True

    stale = invoke(_verdict(node, "Passed", at=_at(-86_400)) | {"release_hold": True})

    assert stale == _answer(node, changed=False)
    seen = core.read_node(node.name)
    assert seen.spec.unschedulable
    assert DEEP_CHECK_TAINT_KEY in [t.key for t in seen.spec.taints]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"

    fresh = invoke(_verdict(node, "Passed") | {"release_hold": True})

    assert fresh == _answer(node, changed=True, uncordoned=True)
    assert not core.read_node(node.name).spec.unschedulable


OLD_BOOT = "boot-before-the-reboot"


def _boot(core: client.CoreV1Api, node: Node) -> str:
    booted: str = core.read_node(node.name).status.node_info.boot_id
    return booted


def test_a_pass_signed_by_the_boot_before_the_reboot_does_not_admit_the_held_node(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """Until the new boot registers, the old boot's key still proves lines: a pass it
    signed after the reboot is logged after the hold began, and must admit nothing."""
    _rebooting(core, node)
    booted = _boot(core, node)
    assert invoke(_hold(node, _at(-30)) | {"boot_id": booted})["held"] is True
    admit = {"release_hold": True}

    old = invoke(_verdict(node, "Passed") | admit | {"key_boot_id": OLD_BOOT})

    assert old["changed"] is False
    assert old["refused"] == (
        f"the pass is signed with the key of boot {OLD_BOOT}, the node's boot is {booted}"
    )
    seen = core.read_node(node.name)
    assert seen.spec.unschedulable
    assert DEEP_CHECK_TAINT_KEY in [t.key for t in seen.spec.taints]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"

    current = invoke(_verdict(node, "Passed") | admit | {"key_boot_id": booted})

    assert current == _answer(node, changed=True, uncordoned=True)
    assert not core.read_node(node.name).spec.unschedulable


def test_the_node_writing_back_its_old_boot_id_does_not_make_the_old_key_s_pass_its_own(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """The hold keeps the boot the reboot's watch saw come back; the Node's bootID is the
    kubelet's to write, and whoever kept the old key may hold its credential too."""
    _rebooting(core, node)
    invoke(_hold(node, _at(-30)) | {"boot_id": _boot(core, node)})
    core.patch_node_status(node.name, {"status": {"nodeInfo": {"bootID": OLD_BOOT}}})

    old = invoke(_verdict(node, "Passed") | {"key_boot_id": OLD_BOOT})

    assert old["changed"] is False and old["refused"]
    assert core.read_node(node.name).metadata.labels[DEEP_CHECK_LABEL] == "InProgress"


@pytest.mark.parametrize("key_boot", ["old", "current"])
def test_a_pass_in_before_the_hold_spares_the_check_only_when_of_the_node_s_boot(
    invoke: Invoke, node: Node, core: client.CoreV1Api, key_boot: str
) -> None:
    _rebooting(core, node)
    booted = _boot(core, node)
    rebooted_at = _at(-30)
    signed = OLD_BOOT if key_boot == "old" else booted
    invoke(_verdict(node, "Passed", at=_at(-5)) | {"key_boot_id": signed})

    answer = invoke(_hold(node, rebooted_at) | {"boot_id": booted})

    assert answer["held"] is (key_boot == "old")
    seen = core.read_node(node.name)
    assert bool(seen.spec.unschedulable) is (key_boot == "old")
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == (
        "InProgress" if key_boot == "old" else "Passed"
    )
