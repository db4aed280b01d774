"""What moto's EC2 and Auto Scaling calls do to the (simulated) machines.

moto records ``RebootInstances`` and ``SetInstanceHealth`` and nothing more. The local
world needs their consequences: a rebooted instance's kubelet comes back with a new boot
id, an instance set ``Unhealthy`` is terminated by its Auto Scaling group and its node
goes away. ``Hypervisor`` is told of the calls (``motopatch.machine_calls``) and calls the
machine-side callbacks (the simulated kubelet's) on a background thread, as a real machine
reboots after the API call has returned.

Public interface (used by the tests and the local demo):

- ``Hypervisor(on_reboot, on_power_off, on_launch=None, terminate_after=None, delay=0)``:
  ``hang(instance_id)`` (its reboots never finish), ``reboots`` (instance ids, in order)
- ``machines(hypervisor)``: context manager; while active, moto's ``RebootInstances``,
  ``TerminateInstances`` and ``SetInstanceHealth`` reach the hypervisor
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from moto.autoscaling.models import AutoScalingBackend

from world.aws import motopatch

log = logging.getLogger(__name__)
Callback = Callable[[str], None]
_TERMINATING = "Terminating"


class Hypervisor:
    """The machines under the moto instances.

    ``on_reboot(instance_id)``: the instance rebooted (the kubelet reports a new boot id).
    ``on_power_off(instance_id)``: the instance is gone (its kubelet stops).
    ``on_launch(instance_id)``: the Auto Scaling group launched a replacement.
    ``terminate_after``: seconds from ``Unhealthy`` to the group terminating the instance
    and launching its replacement; None keeps it ``Terminating`` (tests look at it there).
    """

    def __init__(
        self,
        *,
        on_reboot: Callback,
        on_power_off: Callback,
        on_launch: Callback | None = None,
        terminate_after: float | None = None,
        delay: float = 0.0,
    ) -> None:
        self.on_reboot = on_reboot
        self.on_power_off = on_power_off
        self.on_launch = on_launch
        self.terminate_after = terminate_after
        self.delay = delay
        self.hung: set[str] = set()
        self._hung_reboots: set[str] = set()
        self.powered_off: set[str] = set()
        self.reboots: list[str] = []
        self._lock = threading.Lock()
        self._pending: set[threading.Timer] = set()
        self._stopped = False

    def hang(self, instance_id: str) -> None:
        """Reboots of this instance never finish: no new boot id ever comes, unless
        ``resume`` lets the last one finish."""
        self.hung.add(instance_id)

    def resume(self, instance_id: str) -> None:
        """A hung instance's reboot finishes now, if one was asked for: a test holds a
        remediation in its reboot until it has seen what must happen meanwhile."""
        with self._lock:
            self.hung.discard(instance_id)
            waiting = instance_id in self._hung_reboots
            self._hung_reboots.discard(instance_id)
        if waiting and instance_id not in self.powered_off:
            self._later(self.delay, functools.partial(self.on_reboot, instance_id))

    def _later(self, seconds: float, action: Callable[[], None]) -> None:
        def run() -> None:
            with self._lock:
                self._pending.discard(timer)
                if self._stopped:
                    return
            try:
                action()
            except Exception:
                log.exception("simulated machine action failed")

        timer = threading.Timer(seconds, run)
        timer.daemon = True
        with self._lock:
            if self._stopped:
                return
            self._pending.add(timer)
        timer.start()

    def stop(self) -> None:
        """No machine acts any more: what was due later is dropped, since the world it
        would act on (moto, the kubelets) is going away with this hypervisor."""
        with self._lock:
            self._stopped = True
            pending, self._pending = self._pending, set()
        for timer in pending:
            timer.cancel()

    def rebooted(self, instance_ids: list[str]) -> None:
        for instance_id in instance_ids:
            with self._lock:
                self.reboots.append(instance_id)
                hung = instance_id in self.hung
                if hung:
                    self._hung_reboots.add(instance_id)
            if hung or instance_id in self.powered_off:
                continue
            self._later(self.delay, functools.partial(self.on_reboot, instance_id))

    def powered_down(self, instance_ids: list[str]) -> None:
        for instance_id in instance_ids:
            with self._lock:
                if instance_id in self.powered_off:
                    continue
                self.powered_off.add(instance_id)
            self._later(self.delay, functools.partial(self.on_power_off, instance_id))

    def health_set(self, backend: AutoScalingBackend, instance_id: str, status: str) -> None:
        """An ``Unhealthy`` instance is replaced by its group, as EC2 Auto Scaling does."""
        if status != "Unhealthy":
            return
        state = _instance_state(backend, instance_id)
        if state is None:
            return
        state.lifecycle_state = _TERMINATING
        state.instance._state.name = "shutting-down"
        state.instance._state.code = 32
        self.powered_down([instance_id])
        if self.terminate_after is not None:
            self._later(
                self.terminate_after, functools.partial(self._replace, backend, instance_id)
            )

    def _replace(self, backend: AutoScalingBackend, instance_id: str) -> None:
        state = _instance_state(backend, instance_id)
        if state is None:
            return
        group = state.auto_scaling_group
        before = {s.instance.id for s in group.instance_states}
        backend.terminate_instance(instance_id, should_decrement=False)
        launched = {s.instance.id for s in group.instance_states} - before
        for new_id in sorted(launched):
            if self.on_launch is not None:
                self.on_launch(new_id)


def _instance_state(backend: AutoScalingBackend, instance_id: str) -> Any:
    for group in backend.autoscaling_groups.values():
        for state in group.instance_states:
            if state.instance.id == instance_id:
                return state
    return None


@contextlib.contextmanager
def machines(hypervisor: Hypervisor) -> Iterator[Hypervisor]:
    """While active, moto's EC2 and Auto Scaling calls reach ``hypervisor``; on the way out,
    its machines stop acting."""
    try:
        with motopatch.machine_calls(
            rebooted=hypervisor.rebooted,
            terminated=hypervisor.powered_down,
            health_set=hypervisor.health_set,
        ):
            yield hypervisor
    finally:
        hypervisor.stop()
