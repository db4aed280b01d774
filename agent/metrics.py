"""The agent's own numbers, in the Prometheus text format on a loopback HTTP endpoint
(``agent.telemetry.exposition`` writes it).

Counters are plain attributes bumped by one thread each (the collector, the shipper, the
checks); CPython makes each ``+=`` of an int safe enough for monitoring, and a scrape
that races an increment is off by one for one scrape, never corrupt.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import get_args

from agent.checks.base import Status
from agent.kmsg import Line
from agent.telemetry.exposition import CONTENT_TYPE, Family, Kind, Labels, render
from agent.telemetry.gpu import node_name
from nodemedic.contracts.release import VERSION
from nodemedic.detect.matching import Searcher, compiled

STATUSES = get_args(Status)
Sample = tuple[Labels, float]
XID_RULE = "nvidia-xid-unknown"
"""The catalog's rule for every Xid code: its pattern is the one all Xid rules share."""
XID_MARK = "NVRM: Xid ("


@cache
def xid_pattern() -> Searcher:
    """The catalog's Xid pattern, loaded at the first Xid line: a node that never logs one
    never pays for reading the catalog. A user's rule that replaces the Xid rule runs with
    RE2, as the classifier runs it: its pattern cannot then stall the agent's reader on a
    line, whatever it is (``nodemedic.catalog.linear_error``)."""
    from nodemedic.catalog import load_catalog

    catalog = load_catalog()
    return compiled(catalog.rule(XID_RULE).pattern, linear=XID_RULE in catalog.user)


class Metrics:
    def __init__(self) -> None:
        self.lines_read = 0
        self.events_shipped: Counter[str] = Counter()
        self.events_spooled = 0
        self.events_dropped = 0
        self.events_rejected = 0
        self.records_lost = 0
        self.put_failures = 0
        self.credential_failures = 0
        self.credentials_refused = 0
        self.loop_ages: Callable[[], dict[str, float]] = dict
        """Seconds since each loop last turned (``agent.liveness``)."""
        self.spool_bytes = 0
        self.signing = 0
        self.registration_failures = 0
        self.check_status: dict[str, str] = {}
        self.xids: Counter[tuple[str, str]] = Counter()
        """Xid lines the kernel logged, by (code, PCI address)."""
        self.telemetry: Callable[[], list[Family]] = list
        """The accelerators' telemetry (``agent.telemetry``)."""

    def read(self, lines: Iterable[Line]) -> None:
        """Count the lines the collector read, and the Xids among them: Prometheus
        dashboards then count Xids per GPU without the CloudWatch pipeline. A user-space
        line that imitates one sits behind the injected mark and never matches."""
        for line in lines:
            self.lines_read += 1
            self.records_lost += line.lost
            if XID_MARK in line.message and (match := xid_pattern().search(line.message)):
                self.xids[(str(match.group("xid")), str(match.group("pci") or "").lower())] += 1

    def families(self) -> list[Family]:
        """The agent's own families, read now."""

        def own(name: str, kind: Kind, help_text: str, samples: list[Sample]) -> Family:
            return Family(f"nodemedic_agent_{name}", kind, help_text, samples)

        return [
            own("lines_read_total", "counter", "Kernel log lines read.", [({}, self.lines_read)]),
            own(
                "events_shipped_total",
                "counter",
                "Events acknowledged by CloudWatch Logs, by stream.",
                [({"stream": s}, n) for s, n in sorted(self.events_shipped.items())],
            ),
            own(
                "events_spooled_total",
                "counter",
                "Events written to the on-disk spool.",
                [({}, self.events_spooled)],
            ),
            own(
                "events_dropped_total",
                "counter",
                "Events dropped because the spool was full (each drop is also shipped as a line).",
                [({}, self.events_dropped)],
            ),
            own(
                "events_rejected_total",
                "counter",
                "Events CloudWatch Logs refused (too old or too new).",
                [({}, self.events_rejected)],
            ),
            own(
                "kmsg_records_lost_total",
                "counter",
                "Kernel records overwritten in the ring buffer before the agent read them.",
                [({}, self.records_lost)],
            ),
            own(
                "put_failures_total",
                "counter",
                "PutLogEvents calls that failed and were retried.",
                [({}, self.put_failures)],
            ),
            own(
                "credential_failures_total",
                "counter",
                "Calls refused for the credentials (access denied, expired or missing token).",
                [({}, self.credential_failures)],
            ),
            own(
                "credentials_refused",
                "gauge",
                "1 while the last call was refused for the credentials.",
                [({}, self.credentials_refused)],
            ),
            own(
                "loop_age_seconds",
                "gauge",
                "Seconds since each loop (collector, checks, shipper) last turned.",
                [({"loop": loop}, int(age)) for loop, age in self.loop_ages().items()],
            ),
            own("spool_bytes", "gauge", "Bytes waiting in the spool.", [({}, self.spool_bytes)]),
            own(
                "info",
                "gauge",
                "1, labelled with the agent's release.",
                [({"version": VERSION}, 1)],
            ),
            own(
                "signing",
                "gauge",
                "1 once this boot's key is registered and events ship signed (proof of origin).",
                [({}, self.signing)],
            ),
            own(
                "registration_failures_total",
                "counter",
                "Tries to register the signing key that failed (events ship unsigned meanwhile).",
                [({}, self.registration_failures)],
            ),
            own(
                "xid_total",
                "counter",
                "Xid lines the kernel logged, by Xid code and the GPU's PCI address (Hostname "
                "as the GPU telemetry's).",
                [
                    ({"xid": xid, "pci_bus_id": pci, "Hostname": node_name()}, n)
                    for (xid, pci), n in sorted(self.xids.items())
                ],
            ),
            own(
                "check_status",
                "gauge",
                "1 for the status of each health check's last run (its worst result).",
                [
                    ({"check": check, "status": status}, int(status == current))
                    for check, current in sorted(self.check_status.items())
                    for status in STATUSES
                ],
            ),
        ]

    def render(self) -> str:
        """The agent's families, then the accelerators' telemetry, in one exposition."""
        return render([*self.families(), *self.telemetry()])


LIVENESS_PATH = "/livez"


def metrics_server(
    metrics: Metrics, address: str, port: int, stalled: Callable[[], list[str]] = list
) -> ThreadingHTTPServer:
    """A server for ``/metrics`` and the liveness probe's ``/livez`` (503 naming the loops
    ``stalled`` returns, see ``agent.liveness``), bound now (a port in use fails at
    start-up, not later); ``serve`` runs it."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            status = 200
            if path == "/metrics":
                body = metrics.render().encode()
            elif path == LIVENESS_PATH:
                stuck = stalled()
                status = 503 if stuck else 200
                body = (f"stalled: {', '.join(stuck)}" if stuck else "ok").encode() + b"\n"
            else:
                self.send_error(404)
                return
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Scrapes are not news."""

    try:
        server = ThreadingHTTPServer((address, port), Handler)
    except OSError as exc:
        raise OSError(f"metrics endpoint {address}:{port}: {exc.strerror}") from exc
    server.daemon_threads = True
    return server


def serve(server: ThreadingHTTPServer) -> None:
    """Serve on a daemon thread; the caller shuts the server down."""
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 1.0}, daemon=True
    ).start()
