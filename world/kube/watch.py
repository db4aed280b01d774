"""A record of every change to the cluster's Nodes, as a ``kubectl get nodes -w`` would show
it, with the time each change was seen. The demo's timelines and checks read it: when a
node was cordoned, tainted, rebooted (a new boot id) or deleted."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes import client, watch
from urllib3.exceptions import HTTPError

from nodemedic.contracts.kube import HEALTH_LABEL, TAINT_KEY

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeSeen:
    """One Node as a watch event showed it."""

    at: float
    """Epoch seconds the event arrived."""
    event: str
    """ADDED, MODIFIED or DELETED from the watch; LISTED in a snapshot."""
    name: str
    provider_id: str
    unschedulable: bool
    health: str | None
    taints: tuple[str, ...]
    ready: bool
    boot_id: str

    @property
    def instance_id(self) -> str:
        return self.provider_id.rsplit("/", 1)[-1]

    @property
    def tainted(self) -> bool:
        return any(t.startswith(f"{TAINT_KEY}=") for t in self.taints)


def node_seen(event: str, node: client.V1Node) -> NodeSeen:
    conditions = (node.status.conditions or []) if node.status else []
    return NodeSeen(
        at=time.time(),
        event=event,
        name=node.metadata.name,
        provider_id=node.spec.provider_id or "",
        unschedulable=bool(node.spec.unschedulable),
        health=(node.metadata.labels or {}).get(HEALTH_LABEL),
        taints=tuple(f"{t.key}={t.value or ''}:{t.effect}" for t in node.spec.taints or []),
        ready=any(c.type == "Ready" and c.status == "True" for c in conditions),
        boot_id=node.status.node_info.boot_id if node.status and node.status.node_info else "",
    )


@dataclass
class NodeWatch:
    """Watches Nodes on a thread of its own (with its own client) until ``stop``."""

    make_client: Callable[[], client.ApiClient]
    seen: list[NodeSeen] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> NodeWatch:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="node-watch", daemon=True
        )
        self._thread.start()
        ready.wait(timeout=10)
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def history(self, instance_id: str, since: float = 0.0) -> list[NodeSeen]:
        """What was seen of the instance's Node (by providerID) at or after ``since``."""
        with self._changed:
            return [s for s in self.seen if s.instance_id == instance_id and s.at >= since]

    def first(
        self, instance_id: str, since: float, matches: Callable[[NodeSeen], bool]
    ) -> NodeSeen | None:
        return next((s for s in self.history(instance_id, since) if matches(s)), None)

    def latest(self, instance_id: str) -> NodeSeen | None:
        found = self.history(instance_id)
        return found[-1] if found else None

    def wait(self, check: Callable[[], bool], timeout: float) -> bool:
        """Block until ``check()`` holds after some change was seen, or ``timeout``."""
        with self._changed:
            return self._changed.wait_for(check, timeout=timeout)

    def _run(self, ready: threading.Event) -> None:
        api = self.make_client()
        core = client.CoreV1Api(api)
        version = ""
        try:
            while not self._stopping.is_set():
                try:
                    if not version:
                        listed = core.list_node()
                        version = listed.metadata.resource_version
                        self._record([node_seen("ADDED", n) for n in listed.items])
                        ready.set()
                    stream = watch.Watch().stream(
                        core.list_node, resource_version=version, timeout_seconds=1
                    )
                    for event in stream:
                        node = event["object"]
                        version = node.metadata.resource_version
                        self._record([node_seen(event["type"], node)])
                        if self._stopping.is_set():
                            break
                except client.ApiException as exc:
                    if exc.status == 410:  # history compacted: list again
                        version = ""
                    else:
                        _log.debug("node watch failed: %s", exc)
                        time.sleep(0.2)
                except (HTTPError, OSError) as exc:
                    _log.debug("node watch failed: %s", exc)
                    time.sleep(0.2)
        finally:
            api.close()

    def _record(self, seen: list[NodeSeen]) -> None:
        with self._changed:
            self.seen.extend(seen)
            self._changed.notify_all()
