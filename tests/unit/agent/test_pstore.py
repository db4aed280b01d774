"""Reading the records pstore kept of the boot that died, from real dumps."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent.pstore import ShippedDumps, read_dumps
from nodemedic.contracts.logs import split_injected, split_previous_boot
from nodemedic.detect.classifier import default_classifier
from tests.support.paths import EVENTS

DUMPS = EVENTS / "pstore"
BOOT = "11111111-2222-3333-4444-555555555555"


def test_every_line_of_a_real_dump_is_marked_with_the_boot_that_logged_it() -> None:
    dumps = {d.name: d for d in read_dumps(DUMPS, BOOT, set())}
    assert sorted(dumps) == sorted(p.name for p in DUMPS.glob("dmesg-*"))
    erst = dumps["dmesg-erst-6953966727021461507"].messages
    assert all(m.startswith(f"[previous boot {BOOT}] ") for m in erst)
    bare = [split_previous_boot(m)[1] for m in erst]
    assert "Kernel panic - not syncing: Fatal exception in interrupt" in bare
    assert not any(m.startswith("Panic#") for m in bare), "the part header is no kernel line"
    # A line a part boundary cut has no priority: nothing says the kernel wrote it.
    assert split_injected(bare[0]) == (True, "48180.542749]  ? bio_endio+0xef/0x150")


def test_the_panic_of_a_real_efi_dump_is_a_previous_boot_fault() -> None:
    (dump,) = [d for d in read_dumps(DUMPS, None, set()) if d.name.endswith("03001")]
    faults = [f for _, f in default_classifier().classify_lines(dump.messages, "kmsg")]
    assert [(f.fault_id, f.previous_boot, f.injected) for f in faults] == [
        ("kernel-panic", True, False)
    ]
    assert faults[0].line.startswith("[previous boot unknown] Kernel panic - not syncing")


def test_a_record_is_read_until_its_content_was_shipped_and_never_deleted(
    tmp_path: Path,
) -> None:
    pstore = tmp_path / "pstore"
    shutil.copytree(DUMPS, pstore)
    (pstore / "mce-efi-1").write_text("not kernel log text")
    shipped = ShippedDumps(tmp_path / "shipped.json")
    first = list(read_dumps(pstore, BOOT, shipped.load()))
    assert len(first) == 3, "dmesg records only"
    shipped.add([first[0].digest])
    assert [d.name for d in read_dumps(pstore, BOOT, shipped.load())] == [d.name for d in first[1:]]
    shipped.add([d.digest for d in first[1:]])
    assert list(read_dumps(pstore, BOOT, shipped.load())) == []
    assert sorted(p.name for p in pstore.iterdir()) == sorted(
        [*(p.name for p in DUMPS.iterdir()), "mce-efi-1"]
    )


def test_no_pstore_mounted_is_nothing_to_ship(tmp_path: Path) -> None:
    assert list(read_dumps(tmp_path / "absent", BOOT, set())) == []
