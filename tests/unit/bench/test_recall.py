"""The held-out lines (bench/heldout) measure the catalog on sources no rule was written
from: they must stay unseen by the rest of the repository, and the catalog must detect them
without ever rebooting or replacing a node for a healthy line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.detection import Silencing, held_out_judge, job_verdict, load_corpus
from bench.recall import (
    EIGHTH,
    ELEVENTH,
    FIFTEENTH,
    FIFTH,
    FOURTEENTH,
    FOURTH,
    FRESH,
    HELDOUT,
    NEURON,
    NINTH,
    SETS,
    SEVENTH,
    SIXTH,
    TENTH,
    THIRD,
    THIRTEENTH,
    TWELFTH,
    Line,
    load_lines,
    recall,
    wrong,
)
from nodemedic.catalog import load_catalog
from nodemedic.detect.logformat import message_of
from tests.support.paths import ROOT

LINES = load_lines()
FRESH_LINES = load_lines(FRESH)
THIRD_LINES = load_lines(THIRD)
FOURTH_LINES = load_lines(FOURTH)
FIFTH_LINES = load_lines(FIFTH)
SIXTH_LINES = load_lines(SIXTH)
SEVENTH_LINES = load_lines(SEVENTH)
EIGHTH_LINES = load_lines(EIGHTH)
NINTH_LINES = load_lines(NINTH)
TENTH_LINES = load_lines(TENTH)
ELEVENTH_LINES = load_lines(ELEVENTH)
TWELFTH_LINES = load_lines(TWELFTH)
THIRTEENTH_LINES = load_lines(THIRTEENTH)
FOURTEENTH_LINES = load_lines(FOURTEENTH)
FIFTEENTH_LINES = load_lines(FIFTEENTH)
NEURON_LINES = load_lines(NEURON)
EVERY_SET = (*SETS, NEURON)
CATALOG = load_catalog()
JUDGE = held_out_judge(CATALOG, Silencing(CATALOG))
_SKIP = {"node_modules", "cdk.out", "__pycache__"}


def _repository_text() -> str:
    """Every text file of the repository but the held-out set's own folder, joined."""
    texts: list[str] = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        hidden = any(part.startswith(".") for part in parts)  # .git, .venv, tool caches
        if hidden or _SKIP.intersection(parts) or not path.is_file():
            continue
        if HELDOUT.parent in path.parents or path.stat().st_size > 4_000_000:
            continue
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return "\n".join(texts)


def _texts(line: Line) -> list[str]:
    """Each line of an entry, and the message under its head: a line whose message a rule's
    example holds was seen, whatever head its source wrote before it."""
    texts = []
    for part in line.line.splitlines():
        message = message_of(part)
        texts += [part.strip(), *([message.text.strip()] if message else [])]
    return [text for text in texts if text]


@pytest.mark.parametrize("path", EVERY_SET, ids=lambda path: path.name)
def test_no_held_out_line_appears_anywhere_else_in_the_repository(path: Path) -> None:
    """A held-out line that a rule's example, a test, a peer corpus or another set already
    holds was seen when the rules were written: it would measure memory, not
    generalisation."""
    others = "\n".join(other.read_text(encoding="utf-8") for other in EVERY_SET if other != path)
    text = _repository_text() + "\n" + others
    held_out = [line for line in load_lines(path) if line.split == "held-out"]
    seen = [part for line in held_out for part in _texts(line) if part in text]
    assert held_out and seen == []


@pytest.mark.parametrize("path", EVERY_SET, ids=lambda path: path.name)
def test_no_held_out_line_is_a_peer_corpus_line(path: Path) -> None:
    corpus = {entry.line for entry in load_corpus()}
    held_out = [line for line in load_lines(path) if line.split == "held-out"]
    assert not [text for line in held_out for text in _texts(line) if text in corpus]


def test_the_fresh_set_comes_from_sources_the_first_set_never_used() -> None:
    """The fresh set measures the rules on threads, posts and documents no one looked at
    while writing them: none of its sources is one of the first set's, and it holds enough
    lines of each kind to give a figure."""
    first = {line.source for line in LINES}
    assert not [line.source for line in FRESH_LINES if line.source in first]
    needing = [line for line in FRESH_LINES if line.expect != "none"]
    assert len(needing) >= 40 and len(FRESH_LINES) - len(needing) >= 15


def test_the_third_set_comes_from_sources_neither_set_before_it_used() -> None:
    """Gathered after the fresh set's rules were written, from threads, posts and documents
    neither earlier set came from, with enough lines of each kind to give a figure."""
    earlier = {line.source for line in LINES + FRESH_LINES}
    assert not [line.source for line in THIRD_LINES + NEURON_LINES if line.source in earlier]
    needing = [line for line in THIRD_LINES if line.expect != "none"]
    assert len(needing) >= 50 and len(THIRD_LINES) - len(needing) >= 25


def test_the_fourth_set_comes_from_sources_no_earlier_set_used() -> None:
    earlier = {line.source for line in LINES + FRESH_LINES + THIRD_LINES + NEURON_LINES}
    assert not [line.source for line in FOURTH_LINES if line.source in earlier]
    assert len([line for line in FOURTH_LINES if line.expect != "none"]) >= 30


def test_the_fifth_set_comes_from_sources_no_earlier_set_used() -> None:
    earlier = LINES + FRESH_LINES + THIRD_LINES + NEURON_LINES + FOURTH_LINES
    assert not [line.source for line in FIFTH_LINES if line.source in {e.source for e in earlier}]
    needing = [line for line in FIFTH_LINES if line.expect != "none"]
    assert len(needing) >= 50 and len(FIFTH_LINES) - len(needing) >= 25


@pytest.mark.parametrize(
    "later",
    [SIXTH, SEVENTH, EIGHTH, NINTH, TENTH, ELEVENTH, TWELFTH, THIRTEENTH, FOURTEENTH, FIFTEENTH],
    ids=lambda path: path.name,
)
def test_each_later_set_comes_from_sources_no_earlier_set_used(later: Path) -> None:
    """From the sixth set on, each was gathered after the changes the one before it
    prompted, from sources none of the sets before it (the Neuron set included) used, with
    enough lines of each kind to give a figure. The thirteenth and fourteenth are smaller:
    the public threads of accelerator nodes' hardware that no set had used ran short."""
    before = (*SETS[: SETS.index(later)], NEURON)
    earlier = {line.source for path in before for line in load_lines(path)}
    lines = load_lines(later)
    assert not [line.source for line in lines if line.source in earlier]
    needing = [line for line in lines if line.expect != "none"]
    least, healthy = {THIRTEENTH: (40, 15), FOURTEENTH: (35, 20)}.get(later, (50, 25))
    assert len(needing) >= least and len(lines) - len(needing) >= healthy


EIGHTH_REBOOTED = (
    "RmInitAdapter failed! (0x22:0x56:1017)",
    "RmInitAdapter failed! (0x62:0x0:1835)",
)
"""The eighth set's two healthy lines that reboot, on purpose: desktops running a flavour of
the NVIDIA driver that does not fit their GPU. On a node, ``RmInitAdapter failed`` is a GPU
that did not initialise, which a reset brings back (nvidia-rm-init-adapter-failed); a
driver that does not fit fails on every node of the type at once, and fleet correlation
holds that window's repairs."""

HEALTHY = [
    ln
    for ln in LINES
    + FRESH_LINES
    + THIRD_LINES
    + FOURTH_LINES
    + FIFTH_LINES
    + SIXTH_LINES
    + SEVENTH_LINES
    + EIGHTH_LINES
    + NINTH_LINES
    + TENTH_LINES
    + ELEVENTH_LINES
    + TWELFTH_LINES
    + THIRTEENTH_LINES
    + FOURTEENTH_LINES
    + FIFTEENTH_LINES
    if ln.expect == "none" and not any(d in ln.line for d in EIGHTH_REBOOTED)
]
WRITTEN = [ln for ln in LINES if ln.split == "written" and ln.expect != "none"]
"""The first set's: its written lines are the rules' examples and forms. The fresh set's
written lines are sources a rule was written from after they were scored, measured in
bench/heldout/README.md rather than required."""


@pytest.mark.parametrize("line", HEALTHY, ids=lambda ln: ln.line[:60])
def test_no_healthy_line_reboots_or_replaces_a_node(line: Line) -> None:
    assert not wrong(line, JUDGE(line.line)), (line.source, line.line)


@pytest.mark.parametrize("line", WRITTEN, ids=lambda ln: ln.line[:60])
def test_every_line_of_a_source_the_rules_were_written_from_is_detected(line: Line) -> None:
    assert not wrong(line, JUDGE(line.line)), (line.source, line.line)


@pytest.mark.parametrize(
    "line",
    [
        ln
        for ln in THIRD_LINES + FOURTH_LINES + FIFTH_LINES + SIXTH_LINES
        if ln.split == "written" and ln.expect != "none"
    ],
    ids=lambda ln: ln.line[:60],
)
def test_the_held_out_lines_whose_sources_changed_a_head_or_rule_are_detected(
    line: Line,
) -> None:
    """The third to sixth sets' misses that a head or a rule was then written for,
    from the tools' and drivers' own formats: a syslog tag before dmesg's stamp
    (``kernel:[``), grep -n's line number, a console relayed under a program's tag, dmesg
    -H's decimal comma, a stamp's cut fraction, NVMe's polled completion, Intel's transmit
    unit hang, mlx5's firmware stuck in initialisation, RCU's expedited stalls, the 2.6
    kernels' netdev watchdog, the panic's trailer; a monitor quoting the NVIDIA driver's
    tag, the driver's status codes and GSP's PMU halt, an adapter's link lost and reset,
    i40e's failed reset, an unknown NMI, a firmware record's spaced sequence number, a
    module of the accelerator stack that failed to load, libata's errors, an NVMe
    controller not made live, ext4's recorded errors and iSCSI's ping timeout; a CPU's
    thermal throttling, powerpc's and newer kernels' hard lockups, a machine-check exception
    cut before its status, the firmware's boot error records, a link trained narrower under
    a driver's name, DPC's containment, mlx5's health syndromes and lost device, an Intel
    adapter off the bus, the NVIDIA driver's assertions, GSP and FSP timeouts, confidential
    computing's fatal state and bad register reads, a disk's unrecovered read, MegaRAID's
    command resets, Lustre and LNet losing a server, and AHCI's interface fatal error."""
    assert not wrong(line, JUDGE(line.line)), (line.source, line.line)


SEVENTH_SILENT = (
    "Abandoning msg {",
    "TX timeout detected, starting reset task",
    "mlx5_pci_slot_reset Device state",
    "ib0: queue stopped",
    "Firmware not ready",
    "WARNING: GPU:0: Lost display notification",
    "ata5.00: disabled",
    "missing NVDEC0 engine",
    "BTRFS info (device dm-1): bdev",
    "VFS: busy inodes on changed media",
    "LSO not supported",
)
"""Lines of the seventh set's written sources left silent on purpose: the detail after a
line that is detected (bnxt's abandoned firmware message after its fatal reset, its
transmit timeout after the kernel's NETDEV WATCHDOG line, IPoIB's queue state after its
transmit timeout, a disk disabled after its link's failed reset),
a recovery's success (mlx5's slot reset "recovered"), a warning whose driver goes on
("continuing"), a probe that retries ("Firmware not ready"), and three a review against
the sources found wrong to report: 515.43.04's "missing NVDEC0 engine" (a driver bug on
healthy GPUs, fixed in 515.48.07), btrfs's counters repeated at info level at every
mount, and "busy inodes on changed media", which a disk grown online prints too; and
mlx4_en's missing offload (LSO) with old firmware, a feature the port lacks, whose source's
fault is the InfiniBand that failed to start, which is detected."""


EIGHTH_SILENT = ("ABORT REQUEST on",)
"""Lines of the eighth set's written sources left silent on purpose: an hpsa abort, a
controller's driver no accelerator node here runs."""


NINTH_SILENT = (
    "link reset at upstream device",
    "AER: Corrected error received",
    "Hung TX queue",
    "adding RX filters on PF",
    "the new active one",
    "after resume; waiting",
    "Flip event timeout on head",
    "kernel: : mpt2sas0:",
    "Resp cmpl intr err msg",
    "tx{fw_ring:",
    "continuing anyway",
)
"""Lines of the ninth set's written sources left silent on purpose: the PCI core's debug
line before "Device recovery failed" (which acts), a corrected AER error (the link
corrected it; catalog README), i40e's queue detail and its filter notice beside the reset
that is detected, a bond's failover to a member it still has, a device the PCI core is
still waiting for, a display flip's timeout, and a SAS controller's fault as a paste left
it, an empty field before the message (the rule was written from it); and bnxt_en's
ring dump and firmware's error response, the detail of its transmit timeout's reset,
whose failed ring free is detected; and ice's PHY query that failed at probe, which the
driver goes on without ("continuing anyway"), as ports without media do at every boot,
beside the NVM read of the same probe that is detected."""


TENTH_SILENT = (
    "writeback error on inode",
    "RXDCTL.ENABLE on Rx queue",
    "firmware version: 65535",
    "CREATE_TIS(0x912)",
    "RECV for CQE",
    "nvmet: ctrl 1 fatal error",
    "not in UNREGISTERED state",
    "Refused to change power state, currently in D3",
    "Couldn't open port 1",
    "couldn't register ipoib port",
    "unable to add gid",
    "not enough device MSI-X vectors",
    "0 512-byte logical blocks",
)
"""Lines of the tenth set's written sources left silent on purpose: the detail beside a line
that is detected (the block layer's writeback error under XFS's discarded page, ixgbe's
receive queue that would not stop under its transmit hang's reset, mlx5's unreadable
firmware version and a command's bad parameter before the probe failure, NVMe over RDMA's
failed receive beside mlx5's error completions, ixgbe's MDIO bus torn down after its
firmware's recovery mode), and an NVMe-over-fabrics target's own fatal error, the side of
the fabric no accelerator node here serves; and the detail beside a driver's failure
that nic-driver-failed and storage-driver-failed tell (NVMe's power state after its
controller read all ones, bnxt_re's port after its fence region, IPoIB's port after its
work queue, the RDMA core's GID after mlx5's, ice's vector count before its interrupt
scheme failed, a disk's zero capacity after its failed Read Capacity)."""


ELEVENTH_SILENT = (
    "error loading journal",
    "Cannot open root device",
)
"""Lines of the eleventh set's written sources left silent on purpose: a root file system
that never mounted (no agent runs to ship its lines)."""


TWELFTH_SILENT = (
    "Host adapter abort request",
    "raid level 5 active with 3 out of 4",
    "mlx4_core 0000 : 00 : 05.0 :",
    "did not complete! Status=",
    "Interrupt posted but not delivered",
    ": tx_ring=",
)
"""Lines of the twelfth set's written sources left silent on purpose: aacraid's abort of a
command on a 2.6 RAID adapter before the disk is offlined (which is detected), and an md
array assembled degraded at boot, whose member's failure was told when it failed and
whose count of devices a pattern cannot compare; NVIDIA's reset-flow page, which spaces the
colons of mlx4's PCI address as no kernel prints them (the rule takes the kernel's form);
3c59x's failed command and undelivered interrupt and mtk_eth_soc's ring dump, the
context of the transmit timeout their sources print beside them (which is detected)."""


THIRTEENTH_SILENT = ("resetting fusion adapter",)
"""Lines of the thirteenth set's written sources left silent on purpose: the MegaRAID
driver's reset of its controller, which the firmware's fault on the line before announces
(and which is detected)."""


FIFTEENTH_SILENT = ("ibv_create_ah(",)
"""Lines of the fifteenth set's written sources left silent on purpose: UCX's address
handle to a peer that could not be made (``ibv_create_ah(...) failed: Connection timed
out``), a route or GID the configuration got wrong as often as a fault, beside the endpoint
timeout its source prints (which is detected)."""


def _written(lines: list[Line], silent: tuple[str, ...]) -> list[Line]:
    return [
        ln
        for ln in lines
        if ln.split == "written" and ln.expect != "none" and not any(d in ln.line for d in silent)
    ]


@pytest.mark.parametrize(
    "line",
    _written(SEVENTH_LINES, SEVENTH_SILENT)
    + _written(EIGHTH_LINES, EIGHTH_SILENT)
    + _written(NINTH_LINES, NINTH_SILENT)
    + _written(TENTH_LINES, TENTH_SILENT)
    + _written(ELEVENTH_LINES, ELEVENTH_SILENT)
    + _written(TWELFTH_LINES, TWELFTH_SILENT)
    + _written(THIRTEENTH_LINES, THIRTEENTH_SILENT)
    + _written(FOURTEENTH_LINES, ())
    + _written(FIFTEENTH_LINES, FIFTEENTH_SILENT),
    ids=lambda ln: ln.line[:60],
)
def test_the_later_sets_lines_whose_sources_changed_a_rule_are_detected(line: Line) -> None:
    """Written from the drivers' own formats. From the seventh set: AMD's machine-check
    decoder and IOMMU, Intel's VT-d faults, list corruption, a critical temperature, the 2.4
    kernels' panic and i386's machine check, a bond's member down, Intel adapters' NVM
    checksum and e1000e's reset and link, Broadcom's fatal firmware reset and PCI error,
    IPoIB's transmit timeout, mlx5's PCI error, a port's failed reset, a link not back and
    EDR, GSP's boot failures, RM's channel watchdog and OS-layer context errors,
    nvidia-modeset's errors, OpenZFS's panic, libata slowing or giving up on a link, and the
    SCSI host byte of a failed command. From the eighth: a syslog head elided up to its
    colon, a kernel trace's location line and its WARN banner, a recursive fault, an NX-page
    oops, GHES's memory error kinds, the TSC given up, small allocations failing; ENA's admin
    command timeout, mlx5's failed commands, Intel adapters removed or refusing their
    module, ice's safe mode, a PCI device lost coming out of D3cold and an FLR with work
    pending; RC's critical error, a detached GPU, GSP calls failing, WPR2 left up and
    Booter's unload; md's 2.6 spelling, a SCSI disk offlined or its command aborted,
    OpenZFS's suspended pool, ext4's unwritten extents, XFS's internal errors and corrupt
    inodes, the IDE driver's unreadable sector and Lustre's LBUG. From the ninth: RFC 5424's
    priority spaced off, DPC's own lines, AER's "cant recover", a PCI device not ready after
    a reset or that kernels before 5.18 could not power up, any driver's "TX timeout on
    queue", Intel's malicious driver detection, a bond with no member left, mlx5's error
    CQEs, the newest kernels' WARN banner, IBT's missing ENDBR, nvidia-modeset's push
    buffers, GHES's error status and
    AMD's bank status, XFS's CRC errors, a disk's medium error sense key, libata's media
    error and a SAS controller's fault. From the tenth: a syslog head whose host is empty,
    2.6's machine check with its status, sb_edac's announcement without a controller, VT-d's
    "Fault reason", ixgbe's transmit hang and timeout resets, a network adapter's failed
    probe, Intel's firmware recovery mode, mlx5's command slots exhausted and its error CQEs
    from mlx5_handle_error_cqe, a hot-plug card gone, swiotlb's bounce buffers full and
    XFS's discarded page. From the eleventh: dmesg -T and syslog with a day's padding
    collapsed by a web page, a redacted stamp, BUG()'s "kernel BUG at", mce_panic's reason
    and a corrected record on 2.6's machine-check line, a module's unknown symbol without
    its errno, mlx5's fatal health poll and capabilities refused at probe, Intel's
    malicious driver events that stop a queue, ixgbe's firmware error, a MegaRAID
    controller's fault, the journal's checksum at recovery and NVMe over RDMA's failed
    connect. From the twelfth: skx_edac's machine-check record with "0x", x86's double
    fault, GSP's "bad state" after a failed boot, 2.x's MegaRAID fault and SCSI offline
    spellings, a lost page write, RAID 5's uncorrectable read and degraded operation,
    NVMe's frozen link, a driver's own "transmit timed out" and ConnectX-3's internal error;
    and from the eleventh's last source, a SATA disk whose capacity fell to 0. From the
    misses of the fifth to the twelfth sets read together: any other failure a server NIC's
    or RDMA device's driver, a storage driver or file system, or the NVIDIA driver reports
    of its device, any other XFS error (all told, none acted on), and i40e's queue that
    would not stop. From the thirteenth: Talos's head without its node, MegaRAID's fault
    without its comma, NVMe over TCP's timeouts and error recovery, and a GPU the NVIDIA
    driver would not probe. From the fourteenth: dmesg's decoded facility before two time
    formats' stamps and a caller id, the NVIDIA driver's notice of a GPU it cannot use, and
    its parts of different versions. From the fifteenth: UCX's older spelling of an exhausted
    retry and its endpoint timeout, mlx4_en's link down, ixgbe's malicious VF event, ext4's
    error of the boot before and bcache's disabled cache set."""
    assert not wrong(line, JUDGE(line.line)), (line.source, line.line)


@pytest.mark.parametrize(
    "line", [ln for ln in NEURON_LINES if ln.expect != "none"], ids=lambda ln: ln.line[:60]
)
def test_a_neuron_runtime_hang_in_any_runtime_s_wording_is_evidence(line: Line) -> None:
    """Older runtimes say "inference timeout" where newer ones say "execution timeout", and
    the notification queue's "Missing infer_status notification" comes before either."""
    assert job_verdict(line.line) != "none", (line.source, line.line)


@pytest.mark.parametrize(
    "line", [ln for ln in NEURON_LINES if ln.expect == "none"], ids=lambda ln: ln.line[:60]
)
def test_no_healthy_or_software_neuron_line_is_evidence_against_its_node(line: Line) -> None:
    """A job out of device memory, a version mismatch, a container given no devices, the
    runtime's own chatter: none of them is the node's fault, and a deep check or mail for
    each would teach people to ignore the real ones."""
    assert job_verdict(line.line) == "none", (line.source, line.line)


def test_held_out_recall_stays_at_ninety_percent_or_more() -> None:
    overall = recall(LINES, JUDGE)[("all", "held-out")]
    assert overall.needing >= 50 and overall.percent >= 90, overall


def test_a_miss_a_rule_silences_is_told_apart_from_one_no_rule_knows() -> None:
    """Only the second is a gap in the catalog; the first is its decision (here: the line
    before an OOM kill, which the kill line judges), and the table says which is which."""
    oom = "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=999"
    unknown = "[  12.5] frobnicator 0000:01:00.0: the widget fell over"
    lines = [Line("kernel", "held-out", "notify", "a thread", text) for text in (oom, unknown)]

    score = recall(lines, JUDGE)[("kernel", "held-out")]

    assert (score.needing, score.detected, score.silenced) == (2, 0, 1)
    assert [JUDGE(text) for text in (oom, unknown)] == ["ignore", "none"]


def test_every_entry_names_its_source_and_a_known_split(tmp_path: Path) -> None:
    bad = tmp_path / "lines.yaml"
    bad.write_text("entries:\n  - {family: kernel, split: seen, expect: notify, line: x}\n")
    with pytest.raises(ValueError, match="entry 1: needs split"):
        load_lines(bad)
