"""Container Insights records → each pod's lines, as the job monitor's rules read them."""

from __future__ import annotations

import json

from nodemedic.jobs.hardware import strongest
from nodemedic.jobs.monitor import current, judge_lines, running_from
from nodemedic.jobs.records import lines_by_pod
from nodemedic.jobs.rules import parse_rules

RULES = parse_rules(
    '[{name: start, logPattern: ".*training_loss_step.*", expectedStartCutOffInSeconds: 60}]'
)


def _record(line: str) -> str:
    meta = {"namespace_name": "ml", "pod_name": "bert-0", "labels": {"job-name": "bert"}}
    return json.dumps({"log": line, "kubernetes": meta})


def test_a_line_with_a_lone_surrogate_is_judged_with_the_rest_of_its_delivery() -> None:
    # JSON's escape of half a UTF-16 pair decodes to a str RE2 cannot encode.
    records = [(10.0, _record("garbled \ud800 output")), (11.0, _record("training_loss_step 2.1"))]

    (lines,) = lines_by_pod(records).values()
    states = current(RULES, {}, 0.0, running_from(0.0, 1.0, 1.0))
    judged = judge_lines(RULES, states, lines)

    assert judged["start"].last_match_at == 11.0


def test_a_hardware_line_with_a_lone_surrogate_is_still_found() -> None:
    records = [
        (1.0, _record("bad bytes \udcff\udcfe from the container")),
        (2.0, _record("[MLA 0][NC 0] DMA TX engine 0 is in an abort state \ud800")),
    ]

    (lines,) = lines_by_pod(records).values()
    found = strongest(lines)

    assert found is not None
    assert (found.at, found.rule.id) == (2.0, "neuron-rt-dma-abort")
    assert found.line == "[MLA 0][NC 0] DMA TX engine 0 is in an abort state ?"
