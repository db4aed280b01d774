"""The evidence line a decision carries is written by whoever can write the node's log: it
reaches node conditions (``kubectl describe node``), SNS mails and the ledger cut to size,
with terminal escapes and bidirectional overrides made visible instead of obeyed."""

from __future__ import annotations

from datetime import UTC, datetime

from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.decision import EVIDENCE_MAX, Identity, decide

NODE = Identity(cluster="trn-prod", instance_id="i-0a1b2c3d4e5f60718", source="kmsg")
XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def _evidence(line: str) -> str:
    fault = default_classifier().classify(line)
    assert fault is not None
    decision = decide(fault, NODE, first_seen=datetime(2026, 11, 24, tzinfo=UTC))
    assert decision is not None
    return decision.evidence_line


def test_terminal_escapes_and_bidi_overrides_are_shown_not_obeyed() -> None:
    line = XID79 + " \x1b]0;owned\x07\x1b[2J \u202eevil\u202c\r\n"
    shown = _evidence(line)
    assert shown == XID79 + " \\x1b]0;owned\\x07\\x1b[2J \\u202eevil\\u202c\\x0d\\x0a"
    assert all(ch.isprintable() for ch in shown)


def test_the_evidence_is_cut_to_size_whatever_it_holds() -> None:
    assert len(_evidence(XID79 + " " + "\x1b" * 100_000)) == EVIDENCE_MAX
    assert _evidence(XID79) == XID79
