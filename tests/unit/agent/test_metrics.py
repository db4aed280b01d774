"""The agent's /metrics text: every label value escaped as the format requires, so a stream
or a check named with a quote, a backslash or a newline cannot break or forge a series."""

from __future__ import annotations

from agent.metrics import Metrics
from tests.support.prometheus import read_exposition

AWKWARD = 'i-0abc/kmsg "quoted" back\\slash\nnew_series 1'


def test_label_values_are_escaped_and_read_back_whole() -> None:
    metrics = Metrics()
    metrics.events_shipped[AWKWARD] = 3
    metrics.check_status[AWKWARD] = "fail"
    text = metrics.render()
    assert 'stream="i-0abc/kmsg \\"quoted\\" back\\\\slash\\nnew_series 1"} 3' in text
    assert "\nnew_series" not in text
    seen = read_exposition(text)
    shipped = [k for k in seen if k.startswith("nodemedic_agent_events_shipped_total{")]
    assert len(shipped) == 1 and seen[shipped[0]] == 3
    failing = [k for k, v in seen.items() if k.startswith("nodemedic_agent_check_status{") and v]
    assert len(failing) == 1 and 'status="fail"' in failing[0]
    assert not any(k.startswith("new_series") for k in seen)
