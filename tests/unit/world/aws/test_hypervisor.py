"""A hung reboot waits for ``resume``: tests hold a remediation in its reboot while they
look at what must happen meanwhile, then let the node come back once."""

from __future__ import annotations

import threading

from world.aws.hypervisor import Hypervisor


def _hypervisor() -> tuple[Hypervisor, list[str], threading.Event]:
    back: list[str] = []
    came = threading.Event()

    def on_reboot(instance_id: str) -> None:
        back.append(instance_id)
        came.set()

    return Hypervisor(on_reboot=on_reboot, on_power_off=lambda _: None), back, came


def test_a_hung_reboot_finishes_once_when_resumed() -> None:
    hypervisor, back, came = _hypervisor()
    hypervisor.hang("i-0a")
    hypervisor.rebooted(["i-0a"])
    assert back == [] and hypervisor.reboots == ["i-0a"]

    hypervisor.resume("i-0a")

    assert came.wait(timeout=60)
    hypervisor.resume("i-0a")
    hypervisor.stop()
    assert back == ["i-0a"]
