"""An existing ``neuron-monitor-prometheus.py``'s ``/metrics`` → the uncorrected ECC counts
the Neuron health check acts on.

Where a cluster already runs neuron-monitor (the Neuron Helm chart's or the observability
pattern's DaemonSet), a second copy beside it would double its load and every ``sum()`` of
its series; the agent reads the exporter's page instead. Its counters add each report's
figure from the exporter's start, so they restart from zero when it does: the check takes
a count lower than the last as counted from zero.
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

ECC_FAMILY = "hardware_ecc_events"
"""``hardware_ecc_events_total`` as the parser names the counter family."""
TIMEOUT = 5.0
Counts = dict[tuple[str, str], int]


def uncorrected_counts(text: str, counters: set[str]) -> tuple[Counts, set[str]]:
    """(device, counter) → count for the ``counters`` (event types) asked for, and every
    device the page counts ECC events of (``neuron<index>``)."""
    counts: Counts = {}
    devices: set[str] = set()
    for family in text_string_to_metric_families(text):
        if family.name != ECC_FAMILY:
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            device = f"neuron{sample.labels.get('neuron_device_index', '')}"
            devices.add(device)
            event = sample.labels.get("event_type", "")
            if event in counters:
                counts[(device, event)] = counts.get((device, event), 0) + int(sample.value)
    return counts, devices


def scrape(url: str) -> str:
    """The exporter's page; OSError (URLError included) when it cannot be read."""
    with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:  # noqa: S310 - the operator's URL
        text: str = answer.read().decode()
    return text
