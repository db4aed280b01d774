"""HyperPod's events as the ``hyperpod`` rules see them: what HyperPod decided, whatever the
form its agent writes, and the node from the stream's name, or from a deep health check
result's own fields where its stream names none."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from nodemedic.catalog import Source, load_catalog
from nodemedic.contracts.logs import UnparsableLine
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.classifier import MAX_LINE, classify, unparsable_lines
from nodemedic.detect.filterpattern import filter_terms
from nodemedic.detect.hyperpod import hyperpod_text, instance_of_result, instance_of_stream
from tests.support.paths import EVENTS

INSTANCE = "i-0a1b2c3d4e5f60718"


def event(name: str) -> str:
    return (EVENTS / "hyperpod" / name).read_text().strip()


def npd_event(condition: str, status: str, reason: str) -> str:
    """The agent's NPD form (the documented one) for another condition and status."""
    line = json.loads(event("agent-nvidia-error-reboot.json"))
    line["details: "]["reason"] = reason
    line["details: "]["message"] = f"Node condition {condition} is now: {status}, reason: {reason}"
    return json.dumps(line)


def test_hyperpod_is_a_source_of_the_catalog() -> None:
    assert HYPERPOD_SOURCE in get_args(Source)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("agent-nvidia-error-reboot.json", "agent NvidiaErrorReboot True XidHardwareFailure"),
        ("agent-nvidia-error-terminate.json", "agent NvidiaErrorTerminate True -"),
        (
            "deep-health-check-faulty-instance.json",
            "deep-health-check error Encountered FaultyInstance. Replace the Instance. Region:"
            " us-west-2, InstanceType: p4d.24xlarge. ERROR:Bandwidth has less than threshold:"
            " Expected minimum threshold :80,NCCL Test output Bw: 30",
        ),
    ],
)
def test_each_real_event_reads_as_what_hyperpod_decided(name: str, text: str) -> None:
    assert hyperpod_text(event(name), 8192) == text


def test_a_condition_that_turns_false_is_the_agents_recovery_and_no_fault() -> None:
    raised = npd_event("NvidiaErrorTerminate", "True", "XidHardwareFailure")
    cleared = npd_event("NvidiaErrorTerminate", "False", "XidHardwareFailure")
    fault = classify(raised, "hyperpod")
    assert fault is not None and fault.rule.id == "hyperpod-nvidia-error-terminate"
    assert classify(cleared, "hyperpod") is None


def test_a_condition_no_rule_names_is_only_notified() -> None:
    fault = classify(npd_event("NeuronErrorTerminate", "True", "NeuronHardwareFailure"), "hyperpod")
    assert fault is not None and fault.rule.id == "hyperpod-agent-other"
    assert fault.action == "notify"


def test_a_field_with_spaces_cannot_add_words_to_the_text() -> None:
    """A reason of several words must not shift the status into the reason's place."""
    text = hyperpod_text(npd_event("NvidiaErrorReboot", "True", "a b  c"), 8192)
    assert text == "agent NvidiaErrorReboot True a_b_c"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"HealthMonitoringAgentDetectionEvent": "HealthEvent"}', "names no node condition"),
        ('{"HealthMonitoringAgentDetectionEvent": "x", "condition type: ": " "}', "empty"),
        ('{"level": "info"}', "neither a detection"),
    ],
)
def test_an_event_that_is_neither_kind_is_unparsable_and_has_no_fault(line: str, why: str) -> None:
    with pytest.raises(UnparsableLine, match=why):
        hyperpod_text(line, 8192)
    assert [index for index, _ in unparsable_lines([line], "hyperpod")] == [0]
    assert classify(line, "hyperpod") is None


@pytest.mark.parametrize(
    ("stream", "instance"),
    [
        (f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}", INSTANCE),
        (f"DeepHealthCheckResults/{INSTANCE}", INSTANCE),
        ("DeepHealthCheckResults/3f2a9c1e-0b5d", None),
        (f"SagemakerHealthMonitoringAgent/{INSTANCE}", None),
        (f"SagemakerHealthMonitoringAgent/a/b/{INSTANCE}", None),
        (f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}x", None),
        (f"LifecycleConfig/worker-group-1/{INSTANCE}", None),
    ],
)
def test_the_instance_is_the_streams_and_only_where_it_names_one(
    stream: str, instance: str | None
) -> None:
    assert instance_of_stream(stream) == instance


def test_the_hyperpod_rules_add_no_term_to_the_nodes_log_group_filter() -> None:
    """Their canonical text is in no event verbatim, and their events are in another group:
    a term of theirs would spend the nodes' 2 x 1,024 characters selecting nothing."""
    catalog = load_catalog()
    without = type(catalog)(rules=tuple(r for r in catalog.rules if r.source != "hyperpod"))
    assert filter_terms(catalog) == filter_terms(without)


OTHER = "i-0fe48912b03d2c22e"


@pytest.mark.parametrize(
    ("result", "instance"),
    [
        (event("deep-health-check-faulty-instance-named.json"), INSTANCE),
        (event("deep-health-check-faulty-instance.json"), None),
        # As the Node's name HyperPod gives it, in any field, however deep.
        (json.dumps({"level": "error", "details": {"node": f"hyperpod-{INSTANCE}"}}), INSTANCE),
        # A cluster-level check of two nodes is neither's.
        (json.dumps({"level": "error", "msg": f"NCCL test failed on {INSTANCE}, {OTHER}"}), None),
        (json.dumps({"level": "error", "msg": f"on {INSTANCE} and again {INSTANCE}"}), INSTANCE),
        # Not an instance id: too long, or part of a longer word.
        (json.dumps({"msg": f"{INSTANCE}0"}), None),
        (json.dumps({"msg": f"xi-{INSTANCE[2:]}"}), None),
        ("not json", None),
    ],
)
def test_a_deep_check_result_names_its_node_by_the_one_instance_its_fields_name(
    result: str, instance: str | None
) -> None:
    assert instance_of_result(result, MAX_LINE) == instance
