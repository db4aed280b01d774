"""Names in CloudWatch Logs: the node log group, its streams, and the marks the agent puts on a
line (injected, previous boot, signature, heartbeat, registration) that the classifier reads
back."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

# CloudWatch Logs: where the agents write ------------------------------------------------

NODE_LOG_GROUP: Final = "/nodemedic/{cluster}/nodes"
NODE_LOG_GROUP_RE: Final = re.compile(r"^/nodemedic/(?P<cluster>[A-Za-z][A-Za-z0-9-]*)/nodes$")
STREAM_RE: Final = re.compile(
    r"^(?P<instance>i-[0-9a-f]{8,17})/(?P<source>kmsg|health|deep-check)$"
)
"""``<instance-id>/kmsg``, ``<instance-id>/health`` and ``<instance-id>/deep-check``: the node
identity is the stream name."""


def node_log_group(cluster: str) -> str:
    return NODE_LOG_GROUP.format(cluster=cluster)


def kmsg_stream(instance_id: str) -> str:
    return f"{instance_id}/kmsg"


def health_stream(instance_id: str) -> str:
    return f"{instance_id}/health"


DEEP_CHECK_SOURCE: Final = "deep-check"
"""The deep health check's results (``agent.deepcheck``): stream ``<instance-id>/deep-check``,
health result lines whose last is the verdict, check ``deep-check`` on device ``node``."""


def deep_check_stream(instance_id: str) -> str:
    return f"{instance_id}/{DEEP_CHECK_SOURCE}"


DEEP_CHECK_PASSED_FAULT: Final = "deep-check-passed"
"""The catalog rule of a passed deep check's verdict: its decision is no remediation, the
state machine admits the node instead (``deep_check`` kube op: label ``Passed``, health
``Schedulable``, the health-check taint off)."""
DEEP_CHECK_FAILED_FAULT: Final = "deep-check-failed"
"""The catalog rule of a failed verdict (action replace): the state machine labels the node
``Failed`` before the normal decision path replaces it."""
TELEMETRY_SOURCE: Final = "telemetry"
"""Accelerator telemetry as CloudWatch Embedded Metric Format documents (``agent.telemetry.emf``,
off unless ``--telemetry-emf``): stream ``<instance-id>/telemetry``. CloudWatch turns each
line into metrics of ``TELEMETRY_NAMESPACE``; no line may match the subscription filter."""
TELEMETRY_NAMESPACE: Final = "NodeMedic/Accelerators"
TELEMETRY_DIMENSIONS: Final = ("ClusterName", "InstanceId")
"""Every telemetry metric's dimensions, before the device's own (``GPU``, ``NeuronCore`` or
``NeuronDevice``)."""


def telemetry_stream(instance_id: str) -> str:
    return f"{instance_id}/{TELEMETRY_SOURCE}"


KERNEL_FACILITY: Final = 0
"""The syslog facility of every record the kernel logs itself. A write to ``/dev/kmsg``
from user space is recorded with LOG_USER (1) or the non-zero facility it names, never 0
(``devkmsg_write``), so the facility is what tells a kernel line from an injected one."""
INJECTED_MARK: Final = "[injected facility={facility}] "
"""Put by the agent before every line of a kmsg stream the kernel did not log: a record of
another facility (``facility=1`` for LOG_USER), or a plain line of a followed file, whose
origin nothing tells (``facility=none``). A kernel record ships as its bare message, as it
always has, so the stream and the subscription filter see the text either way; the
classifier reads the mark (``split_injected``) and caps what such a line may do."""
_INJECTED_MARK_RE: Final = re.compile(r"\[injected facility=(?:\d+|none)\] ")


def shipped_message(message: str, facility: int | None) -> str:
    """The event text of a kernel log line with syslog facility ``facility`` (None: a plain
    line without a record header)."""
    if facility == KERNEL_FACILITY:
        return message
    return INJECTED_MARK.format(facility="none" if facility is None else facility) + message


def split_injected(text: str) -> tuple[bool, str]:
    """(marked injected, the message behind the mark) of a kmsg event's text."""
    if text.startswith("[injected "):
        found = _INJECTED_MARK_RE.match(text)
        if found is not None:
            return True, text[found.end() :]
    return False, text


PREVIOUS_BOOT_MARK: Final = "[previous boot {boot_id}] "
"""Put by the agent before every line it ships from the boot that died (pstore, see
``agent.pstore``), outside any injected mark: ``{boot_id}`` is the boot the agent last
shipped from, or ``unknown``. Such a line is evidence of a crash that a reboot already
ended, so the classifier reads the mark (``split_previous_boot``) and the decision is
recorded and notified, never acted on again on the new boot."""
_PREVIOUS_BOOT_MARK_RE: Final = re.compile(r"\[previous boot [0-9A-Za-z-]{1,64}\] ")


def previous_boot_message(shipped: str, boot_id: str | None) -> str:
    """The event text of ``shipped`` (a ``shipped_message``) logged by boot ``boot_id``."""
    return PREVIOUS_BOOT_MARK.format(boot_id=boot_id or "unknown") + shipped


def split_previous_boot(text: str) -> tuple[bool, str]:
    """(marked previous boot, the text behind the mark) of a kmsg event's text."""
    if text.startswith("[previous boot "):
        found = _PREVIOUS_BOOT_MARK_RE.match(text)
        if found is not None:
            return True, text[found.end() :]
    return False, text


IDENTITY_STREAM: Final = "{instance_id}/identity"
"""Where an agent registers its signing key: one event per start, the registration
encrypted under the cluster's origin key (``nodemedic.origin``). No subscription reads it;
the classifier reads it itself (``logs:GetLogEvents``) only when it meets a key its ledger
does not hold (``REGISTRATION_MARK``: the kmsg stream carries the same registration)."""
IDENTITY_STREAM_RE: Final = re.compile(r"^i-[0-9a-f]{8,17}/identity$")


def identity_stream(instance_id: str) -> str:
    return IDENTITY_STREAM.format(instance_id=instance_id)


ORIGIN_KEY_ALIAS: Final = "alias/nodemedic-{cluster}-origin"
"""The KMS key agents encrypt their registrations under and only the classifier decrypts."""
ORIGIN_CONTEXT_CLUSTER: Final = "nodemedic:cluster"
ORIGIN_CONTEXT_INSTANCE: Final = "nodemedic:instance"
"""The KMS encryption context of a registration: it decrypts only as the registration of
that instance in that cluster, so it cannot be moved to another node's identity stream."""


def origin_key_alias(cluster: str) -> str:
    return ORIGIN_KEY_ALIAS.format(cluster=cluster)


SIGNATURE_MARK: Final = "[signed {key_id} {mac}] "
"""Put by the agent before every event it ships, outside every other mark: the id of its
registered key and the HMAC that binds the instance, the event's timestamp and the rest of
its text to that key (``nodemedic.origin.signing``)."""
_SIGNATURE_MARK_RE: Final = re.compile(
    r"\[signed (?P<key_id>[0-9a-f]{8}) (?P<mac>[A-Za-z0-9_-]{22})\] "
)


def split_signature(text: str) -> tuple[tuple[str, str] | None, str]:
    """((key id, mac) or None when unsigned, the text behind the mark) of an event's text."""
    if text.startswith("[signed "):
        found = _SIGNATURE_MARK_RE.match(text)
        if found is not None:
            return (found["key_id"], found["mac"]), text[found.end() :]
    return None, text


AGENT_LINE_PREFIX: Final = "nodemedic: "
"""What every line the agent writes of its own starts with (spool-full notes, overwritten
ring buffer counts, heartbeats): one subscription filter term selects them all."""
REGISTRATION_MARK: Final = AGENT_LINE_PREFIX + "registration "
"""The kmsg stream's registration line: the mark, then the boot's registration sealed as in
its identity stream (``agent.origin.sealed_registration``). The agent ships it unsigned,
ahead of every line its key signs, so the subscription brings it to the classifier with the
boot's first lines; the classifier proves it once, keeps it in the ledger
(``contracts.ledger.REGISTRATION_PK_PREFIX``), and never classifies it."""


def registration_message(sealed: str) -> str:
    return REGISTRATION_MARK + sealed


def parse_registration(text: str) -> str | None:
    """The sealed registration a registration line carries; None for any other line."""
    return text[len(REGISTRATION_MARK) :] if text.startswith(REGISTRATION_MARK) else None


HEARTBEAT_MARK: Final = AGENT_LINE_PREFIX + "heartbeat "
HEARTBEAT_SECONDS: Final = 300
"""The agent's default heartbeat interval; the reconcile calls a node silent after
``SILENT_AFTER_BEATS`` of them."""
SILENT_AFTER_BEATS: Final = 3


def heartbeat_message(state: Mapping[str, int | str]) -> str:
    """The kmsg stream's heartbeat line: the mark, then the agent's state as compact JSON
    (``interval`` in seconds, its counters, and its release as ``version``, a string that
    ``read_heartbeat`` leaves out, as every release's does: ``docs/contracts.md``)."""
    return HEARTBEAT_MARK + json.dumps(state, separators=(",", ":"), sort_keys=True)


def parse_heartbeat(text: str) -> dict[str, int] | None:
    """The state a heartbeat line carries; None for any other line (a kernel line, one
    marked injected or previous-boot: only the agent writes a bare heartbeat)."""
    if not text.startswith(HEARTBEAT_MARK):
        return None
    try:
        return read_heartbeat(text)
    except UnparsableLine:
        return None


def read_heartbeat(text: str) -> dict[str, int]:
    """The state of ``text``, a line that starts with ``HEARTBEAT_MARK``: its integer
    counters of at most 64 bits (a larger one is no count an agent keeps, and would not fit
    a float or a DynamoDB number); UnparsableLine when it holds no JSON object."""
    if len(text) > MAX_HEARTBEAT_CHARS:
        raise UnparsableLine(f"a heartbeat of more than {MAX_HEARTBEAT_CHARS} characters")
    state = json_line(text[len(HEARTBEAT_MARK) :], MAX_HEARTBEAT_CHARS)
    if not isinstance(state, dict):
        raise UnparsableLine("a heartbeat that is not a JSON object")
    return {
        k: v for k, v in state.items() if isinstance(k, str) and type(v) is int and abs(v) < 2**63
    }


MAX_HEARTBEAT_CHARS: Final = 1024
"""A longer line is no heartbeat: what is stored of one stays small."""

# JSON lines: health results, deep-check verdicts, heartbeats ------------------------------


class UnparsableLine(ValueError):
    """A line of a node stream that is not what its stream carries; the message says why."""


MAX_JSON_DEPTH: Final = 32
"""Nesting a JSON line may have. A health result nests two deep; Python's parser recurses
once per level and raises RecursionError near a thousand, which a line of 1 KiB of ``[``
reaches: such a line must be refused before it is parsed, not fail the batch it is in."""
_JSON_SYNTAX: Final = re.compile(r'[\[\]{}"\\]')


def json_line(text: str, max_chars: int) -> Any:
    """The JSON value of one line of at most ``max_chars`` characters nested at most
    ``MAX_JSON_DEPTH`` deep; UnparsableLine otherwise. The nesting is measured only where
    the line holds more brackets than that (a health result holds a handful)."""
    if len(text) > max_chars:
        raise UnparsableLine(f"{len(text)} characters, more than {max_chars}")
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _nested_deeper(text, MAX_JSON_DEPTH):
        raise UnparsableLine(f"JSON nested more than {MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UnparsableLine(f"not JSON: {exc}") from exc


def _nested_deeper(text: str, limit: int) -> bool:
    """Whether the brackets of ``text`` nest deeper than ``limit`` outside its JSON strings
    (one pass over the brackets, quotes and backslashes only, which ends at the first
    bracket past the limit: a line of nothing but ``[`` costs ``limit`` steps, not 8,000)."""
    depth = 0
    in_string = False
    escaped_at = -1
    for found in _JSON_SYNTAX.finditer(text):
        at, char = found.start(), found.group()
        if at == escaped_at:
            continue
        if in_string:
            if char == "\\":
                escaped_at = at + 1
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False
