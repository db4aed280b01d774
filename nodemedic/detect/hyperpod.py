"""SageMaker HyperPod's own findings as text the catalog's ``hyperpod`` rules match.

HyperPod writes two kinds of events to a cluster's log group
(``/aws/sagemaker/Clusters/<name>/<id>``): its health monitoring agent's detections, on
``SagemakerHealthMonitoringAgent/<instance group>/<instance id>``, and the deep health
check's results, on ``DeepHealthCheckResults/<id>``. Neither has a published schema; the
shapes read here are the ones AWS's documentation and the agent's logs show
(tests/events/hyperpod/SOURCES.md). Each is reduced to one canonical text, so a rule names
what HyperPod decided (the node condition it set, the deep check's verdict) and not where
its agent put it in the JSON:

- a detection: ``"agent <condition type> <status> <reason>"``, e.g.
  ``agent NvidiaErrorReboot True XidHardwareFailure``;
- a deep health check result: ``"deep-health-check <level> <msg>"``.

An event that is neither is unparsable (``UnparsableLine``): counted and logged, never a
fault.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from nodemedic.contracts.logs import UnparsableLine, json_line
from nodemedic.contracts.substrates import (
    HYPERPOD_AGENT_STREAM_PREFIX,
    HYPERPOD_DEEP_HEALTH_STREAM_PREFIX,
)

AGENT_MARK: Final = "HealthMonitoringAgentDetectionEvent"
"""The key every detection carries (AWS's documented Logs Insights query filters on it)."""
AGENT_TEXT: Final = "agent"
DEEP_HEALTH_TEXT: Final = "deep-health-check"
_CONDITION = re.compile(r"^Node condition (?P<condition>\w+) is now: (?P<status>\w+)")
"""NPD's message of a condition change, quoted in the agent's ``details`` object."""
_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")
_INSTANCE_IN_TEXT = re.compile(r"(?<![0-9a-z])i-[0-9a-f]{8}(?:[0-9a-f]{9})?(?![0-9a-z])")
"""An EC2 instance id as HyperPod's API takes one (``i-[a-f0-9]{8}(?:[a-f0-9]{9})?``,
InstanceGroupHealthCheckConfiguration), alone or in the name HyperPod gives the instance's
EKS Node (``hyperpod-i-0123456789abcdef0``)."""
_NO_REASON = "-"


def _word(value: object) -> str:
    """One word of the canonical text: the rules split on spaces, so a field must not add
    words of its own (an empty one is ``-``)."""
    text = "_".join(str(value).split()) if value is not None else ""
    return text or _NO_REASON


def _object(event: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """The first of ``keys`` that holds an object; the agent spells its keys with a
    trailing ``": "`` or ``" "`` (``"details: "``, ``"with condition details "``)."""
    for key in keys:
        value = event.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def _detection_text(event: Mapping[str, Any]) -> str:
    """``agent <condition> <status> <reason>`` of one detection, in either form the agent
    writes: ``"condition type: "`` beside ``"with condition details "``, or NPD's event
    whose ``details.message`` reads ``Node condition <type> is now: <status>, ...``."""
    condition = event.get("condition type: ")
    details = _object(event, "with condition details ", "details: ", "details")
    status: object = details.get("status", "True")
    if not isinstance(condition, str):
        found = _CONDITION.match(str(details.get("message", "")))
        if found is None:
            raise UnparsableLine("a detection that names no node condition")
        condition, status = found["condition"], found["status"]
    if not condition.strip():
        raise UnparsableLine("a detection with an empty node condition")
    return " ".join((AGENT_TEXT, _word(condition), _word(status), _word(details.get("reason"))))


def is_detection(message: str) -> bool:
    """The message reads as a health monitoring agent's detection, wherever it was found (a
    file people keep, a Logs Insights export): cheap, before any parse."""
    return message.startswith("{") and f'"{AGENT_MARK}"' in message


def hyperpod_text(line: str, max_chars: int) -> str:
    """The canonical text of one HyperPod event of at most ``max_chars`` characters;
    UnparsableLine when it is neither a detection nor a deep health check result."""
    event = json_line(line, max_chars)
    if not isinstance(event, dict):
        raise UnparsableLine("not a JSON object")
    if AGENT_MARK in event:
        return _detection_text(event)
    level, message = event.get("level"), event.get("msg")
    if isinstance(level, str) and isinstance(message, str):
        return f"{DEEP_HEALTH_TEXT} {_word(level)} {' '.join(message.split())}"
    raise UnparsableLine(f"neither a detection ({AGENT_MARK}) nor a deep health check result")


def instance_of_stream(stream: str) -> str | None:
    """The EC2 instance a HyperPod stream's events are about, from the stream's name alone
    (never from an event's text, which names no instance or any it likes): the last part of
    ``SagemakerHealthMonitoringAgent/<group>/<instance id>``, or the id of
    ``DeepHealthCheckResults/<id>`` where that id is an instance id. None: the stream names
    no instance (another of HyperPod's streams, or a deep check stream of another id)."""
    if stream.startswith(HYPERPOD_AGENT_STREAM_PREFIX):
        parts = stream.split("/")
        candidate = parts[-1] if len(parts) == 3 else ""
    elif stream.startswith(HYPERPOD_DEEP_HEALTH_STREAM_PREFIX):
        candidate = stream.removeprefix(HYPERPOD_DEEP_HEALTH_STREAM_PREFIX)
    else:
        return None
    return candidate if _INSTANCE.match(candidate) else None


def _texts(value: object) -> list[str]:
    """Every string of a JSON value, however deep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for each in value.values() for text in _texts(each)]
    if isinstance(value, list):
        return [text for each in value for text in _texts(each)]
    return []


def instance_of_result(line: str, max_chars: int) -> str | None:
    """The instance a deep health check result is about where its stream names none: the
    one instance its own fields name, by its id or its Node's name. AWS's documentation says
    the results "show the instance ID that failed the checks", but publishes neither the
    field nor how ``DeepHealthCheckResults/<log_stream_id>`` is made
    (tests/events/hyperpod/SOURCES.md). None where it names none, or several: a result about
    several nodes (a cluster-level NCCL test) is no one node's to repair."""
    try:
        event = json_line(line, max_chars)
    except UnparsableLine:
        return None
    named = {found for text in _texts(event) for found in _INSTANCE_IN_TEXT.findall(text)}
    return named.pop() if len(named) == 1 else None
