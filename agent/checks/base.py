"""The one interface every health check implements, and what checks share.

A check returns result lines (``Result``); it raises ``ToolMissing`` when its tool or
sysfs tree is not on this node, which the runner reports once as ``skipped``. Checks that
watch cumulative counters keep a ``CounterBaseline`` so a counter that grew is reported
once, not on every run, and not again after an agent restart on the same boot.
``SysfsDevices`` is what the sysfs-based checks (Neuron, EFA) have in common.
"""

from __future__ import annotations

import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from agent.checkpoint import write_atomically
from nodemedic.health.devices import missing_devices
from nodemedic.health.result import Figure, Result, Status, utc_stamp

# The result line is nodemedic.health's (triage writes it too); the checks take it from here.
__all__ = [
    "Check",
    "CounterBaseline",
    "Figure",
    "Result",
    "Runner",
    "Status",
    "SysfsDevices",
    "ToolMissing",
    "read_counter",
    "utc_stamp",
    "worst",
]
log = logging.getLogger(__name__)
_RANK = {"skipped": 0, "ok": 1, "warn": 2, "fail": 3}


def worst(results: Sequence[Result]) -> Status:
    return max((r.status for r in results), key=_RANK.__getitem__, default="ok")


def read_counter(path: Path) -> int | None:
    """A sysfs counter file's value; None when the driver does not expose it."""
    try:
        return int(path.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        return None


class ToolMissing(Exception):
    """The check's tool or sysfs tree is not on this node."""


class Check(ABC):
    name: str

    @abstractmethod
    def run(self, ts: str) -> list[Result]:
        """This run's results, stamped ``ts``; raises ToolMissing."""

    def commit(self) -> Callable[[], None]:
        """Something to call once this run's results are safe (acknowledged or spooled)."""
        return _nothing


def _nothing() -> None:
    """Stateless checks have nothing to persist."""


class CounterBaseline:
    """The last value of each (device, counter) seen on this boot, kept on disk.

    Counters count since the driver loaded, i.e. since boot: on a new boot the baseline
    starts at zero, so errors counted before the agent started are reported too. The file
    is only rewritten once the results reporting the growth are safe (``commit``); a crash
    in between reports the growth again rather than never.
    """

    def __init__(self, path: Path, boot_id: str) -> None:
        self._path = path
        self._boot_id = boot_id
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, int]] = {}
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("boot_id") == boot_id:
                self._seen = {d: dict(c) for d, c in saved["counters"].items()}
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s unreadable (%s); counting from zero", path, exc)

    def growth(self, device: str, counter: str, value: int) -> int:
        """How much ``counter`` grew since last seen (0 if not; a counter reset by a write
        to its sysfs file is not growth)."""
        with self._lock:
            seen = self._seen.setdefault(device, {})
            before = seen.get(counter, 0)
            seen[counter] = value
            return max(0, value - before)

    def commit(self) -> Callable[[], None]:
        with self._lock:
            snapshot = {
                "boot_id": self._boot_id,
                "counters": {d: dict(c) for d, c in self._seen.items()},
            }

        def save() -> None:
            write_atomically(self._path, json.dumps(snapshot).encode())

        return save


class SysfsDevices(Check):
    """A check of the devices one driver lists under a sysfs directory, whose cumulative
    counters a ``CounterBaseline`` watches.

    The drivers differ in which entries are devices and what their counters mean
    (``device_results``); the rest is the same for each: no directory or no device is
    ``ToolMissing`` (unless devices are expected), fewer devices than expected fails the
    node, and the baseline is saved once the results are safe.
    """

    sysfs_dir: str
    kind: str
    """Names the devices and driver in the ToolMissing messages."""

    def __init__(
        self, sys_root: Path, baseline: CounterBaseline, expected_devices: int = 0
    ) -> None:
        self.root = sys_root / self.sysfs_dir
        self.baseline = baseline
        self.expected_devices = expected_devices

    @abstractmethod
    def devices(self) -> list[Path]:
        """This driver's devices under ``root``, in report order."""

    @abstractmethod
    def device_results(self, device: Path, ts: str) -> list[Result]:
        """One device's results; counter growth comes from ``baseline``."""

    def run(self, ts: str) -> list[Result]:
        if not self.root.is_dir():
            raise ToolMissing(f"{self.root} not found (no {self.kind} driver)")
        devices = self.devices()
        if not devices and not self.expected_devices:
            raise ToolMissing(f"no {self.kind} devices under {self.root}")
        results = missing_devices(self.name, self.expected_devices, len(devices), ts)
        for device in devices:
            results.extend(self.device_results(device, ts))
        return results

    def commit(self) -> Callable[[], None]:
        return self.baseline.commit()


class Runner:
    """Runs the checks; a missing tool is reported once until it comes back."""

    def __init__(self, checks: Sequence[Check]) -> None:
        self.checks = list(checks)
        self._missing: set[str] = set()

    def run(self, now: datetime) -> tuple[list[Result], list[Callable[[], None]]]:
        ts = utc_stamp(now)
        results: list[Result] = []
        commits: list[Callable[[], None]] = []
        for check in self.checks:
            try:
                found = check.run(ts)
            except ToolMissing as exc:
                if check.name not in self._missing:
                    log.info("%s: %s; reported once as skipped", check.name, exc)
                    self._missing.add(check.name)
                    results.append(Result(check.name, "node", "skipped", "ToolMissing", {}, ts))
                continue
            except Exception:
                # A bug in one check must not stop the others or the kernel log.
                log.exception("%s failed to run", check.name)
                continue
            self._missing.discard(check.name)
            results.extend(found)
            commits.append(check.commit())
        return results, commits
