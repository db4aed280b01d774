"""Lines of the boot that died (pstore): recorded, notified and counted, never acted on
again on the new boot."""

from __future__ import annotations

from nodemedic.contracts.logs import previous_boot_message
from nodemedic.remediate.decision import PREVIOUS_BOOT_NOTE
from tests.unit.lambdas.classify.test_service import WRITEBACK, run_batch

PANIC = "Kernel panic - not syncing: Fatal exception in interrupt"


def previous(line: str) -> str:
    return previous_boot_message(line, "11111111-2222-3333-4444-555555555555")


def test_a_previous_boot_panic_is_notified_not_rebooted_even_where_injected_lines_act() -> None:
    for accept_injected in (False, True):
        started, result = run_batch([previous(PANIC)], accept_injected=accept_injected)
        (decision,) = started
        assert (decision.fault_id, decision.action) == ("kernel-panic", "notify")
        assert decision.evidence_line.startswith(PREVIOUS_BOOT_NOTE.format(action="reboot"))
        assert decision.evidence_line.endswith(PANIC)
        assert result.capped == [decision.decision_id]


def test_a_panic_of_the_new_boot_still_reboots_beside_the_previous_boots() -> None:
    started, result = run_batch([previous(PANIC), PANIC])
    (decision,) = started
    assert (decision.action, decision.evidence_line) == ("reboot", PANIC)
    (capped,) = result.superseded
    assert capped != decision.decision_id, "the notify does not take the reboot's name"


def test_previous_boot_hits_count_towards_the_threshold_of_the_new_boots() -> None:
    started, _ = run_batch([previous(WRITEBACK), WRITEBACK])
    assert [(d.fault_id, d.action, d.count) for d in started] == [
        ("nfs-writeback-hang", "notify", 2)
    ]
