"""Batches leave oldest first whether they waited in memory or on disk; the spool is
bounded, survives restarts, and says what it dropped."""

from __future__ import annotations

from pathlib import Path

from agent.batch import Batch
from agent.checkpoint import Checkpoint, CheckpointStore, Progress
from agent.main import start_position
from agent.metrics import Metrics
from agent.outbox import Outbox, dropped_message
from agent.spool import Spool


def batch(stream: str, *messages: str, seq: int | None = None) -> Batch:
    events = [(1_700_000_000_000 + i, m) for i, m in enumerate(messages)]
    cursor = Checkpoint("boot", seq) if seq is not None else None
    return Batch(stream, events, sum(len(m) + 26 for m in messages), cursor)


def drain(outbox: Outbox) -> list[list[str]]:
    out = []
    while (head := outbox.peek(0)) is not None:
        out.append([m for _, m in head.events])
        outbox.acked(head)
    return out


def test_memory_and_spool_are_shipped_in_creation_order(tmp_path: Path) -> None:
    outbox = Outbox(Spool(tmp_path, 64 * 1024 * 1024), Metrics(), max_memory_batches=2)
    for n in range(3):
        outbox.put(batch("s", f"m{n}"))  # m2 does not fit in memory: spooled
    outbox.to_disk(True)  # outage: m0 and m1 go to disk too, m3 straight there
    outbox.put(batch("s", "m3"))
    outbox.to_disk(False)
    outbox.put(batch("s", "m4"))  # back in memory, behind the spooled ones
    assert drain(outbox) == [["m0"], ["m1"], ["m2"], ["m3"], ["m4"]]
    assert len(outbox) == 0 and not list(tmp_path.glob("*.batch"))


def test_spooled_batches_survive_a_restart_in_order(tmp_path: Path) -> None:
    first = Outbox(Spool(tmp_path, 64 * 1024 * 1024), Metrics())
    first.to_disk(True)
    for n in range(3):
        first.put(batch("s", f"m{n}", "é\\xff"))
    second = Outbox(Spool(tmp_path, 64 * 1024 * 1024), Metrics())
    second.put(batch("s", "after restart"))
    assert drain(second) == [
        ["m0", "é\\xff"],
        ["m1", "é\\xff"],
        ["m2", "é\\xff"],
        ["after restart"],
    ]


def test_a_full_spool_drops_the_oldest_and_ships_the_count(tmp_path: Path) -> None:
    metrics = Metrics()
    one = len(batch("s", "x" * 1000).events[0][1])
    spool = Spool(tmp_path, max_bytes=3 * (one + 300))
    outbox = Outbox(spool, metrics)
    outbox.to_disk(True)
    for n in range(6):
        outbox.put(batch("s", f"{n}" * 1000, f"second of {n}"))
    shipped = drain(outbox)
    notes = [m for b in shipped for m in b if m.startswith("nodemedic:")]
    kept = [b for b in shipped if not b[0].startswith("nodemedic:")]
    dropped = metrics.events_dropped
    assert dropped > 0 and notes
    assert sum(int(n.split("dropped ")[1].split()[0]) for n in notes) == dropped
    assert notes[0] == dropped_message(int(notes[0].split("dropped ")[1].split()[0]))
    # What is left is the newest batches, in order.
    assert [b[1] for b in kept] == [f"second of {n}" for n in range(6 - len(kept), 6)]
    assert len(kept) * 2 + dropped == 12


def test_one_note_counts_everything_an_outage_dropped(tmp_path: Path) -> None:
    metrics = Metrics()
    size = len(batch("s", "x" * 1000).events[0][1])
    outbox = Outbox(Spool(tmp_path, max_bytes=2 * (size + 300)), metrics)
    outbox.to_disk(True)
    for n in range(12):  # notes are dropped too as the spool keeps overflowing
        outbox.put(batch("s", f"{n}" * 1000))
    shipped = [m for b in drain(outbox) for m in b]
    notes = [m for m in shipped if m.startswith("nodemedic:")]
    kept = [m for m in shipped if not m.startswith("nodemedic:")]
    assert notes == [dropped_message(12 - len(kept))] and shipped[-1] == notes[0]
    assert metrics.events_dropped == 12 - len(kept)


def test_the_batch_being_sent_is_not_dropped_from_a_full_spool(tmp_path: Path) -> None:
    metrics = Metrics()
    size = len(batch("s", "x" * 1000).events[0][1])
    outbox = Outbox(Spool(tmp_path, max_bytes=3 * (size + 300)), metrics)
    outbox.to_disk(True)
    outbox.put(batch("s", "a" * 1000))
    sending = outbox.peek(0)
    assert sending is not None
    for n in range(5):  # the spool overflows while "a" is on its way
        outbox.put(batch("s", f"{n}" * 1000))
    outbox.acked(sending)  # the service took it: not a loss
    rest = [m for b in drain(outbox) for m in b]
    assert "a" * 1000 not in rest
    dropped = metrics.events_dropped
    assert dropped > 0 and 1 + dropped + sum(not m.startswith("nodemedic:") for m in rest) == 6
    outbox.put(batch("s", "b" * 1000))
    failed = outbox.peek(0)
    assert failed is not None
    outbox.release()  # not delivered; waiting to retry, it is the oldest like any other
    for n in range(5):
        outbox.put(batch("s", f"{n}" * 1000))
    assert "b" * 1000 not in [m for b in drain(outbox) for m in b]


def test_checkpoint_counts_a_spooled_batch_as_safe(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoint.json")
    progress = Progress(store, Checkpoint("boot", 0))
    outbox = Outbox(
        Spool(tmp_path / "spool", 64 * 1024 * 1024), Metrics(), progress, max_memory_batches=1
    )
    outbox.put(batch("k", "a", seq=10))  # in memory: not yet safe
    assert store.load() is None
    head = outbox.peek(0)
    assert head is not None
    outbox.acked(head)
    assert store.load() == Checkpoint("boot", 10)
    outbox.put(batch("k", "b", seq=20))
    outbox.put(batch("k", "c", seq=30))  # memory full: both go to disk, both safe
    assert store.load() == Checkpoint("boot", 30)
    assert drain(outbox) == [["b"], ["c"]]


def test_after_a_crash_every_record_is_spooled_or_read_again(tmp_path: Path) -> None:
    """A batch waits in memory while newer ones overflow to disk, then the agent is killed:
    each record must be in the spool or after the point the restarted agent reads from."""
    store = CheckpointStore(tmp_path / "checkpoint.json")
    progress = Progress(store, Checkpoint("boot", 0))
    outbox = Outbox(Spool(tmp_path / "spool", 64 * 1024 * 1024), Metrics(), progress)
    for first in (1, 4, 7):
        outbox.put(batch("k", *(str(n) for n in range(first, first + 3)), seq=first + 2))
    del outbox  # SIGKILL: what was in memory is gone
    spool = Spool(tmp_path / "spool", 64 * 1024 * 1024)
    resume = start_position(store.load(), spool, "boot", device=True)
    spooled = {m for b in drain(Outbox(spool, Metrics())) for m in b}
    read_again = {str(n) for n in range(resume.seq + 1, 10)}
    assert spooled | read_again == {str(n) for n in range(1, 10)}
    assert not spooled & read_again, "nothing twice"


def test_a_damaged_spool_file_is_set_aside_and_the_rest_ships(tmp_path: Path) -> None:
    outbox = Outbox(Spool(tmp_path, 64 * 1024 * 1024), Metrics())
    outbox.to_disk(True)
    for n in range(3):
        outbox.put(batch("s", f"m{n}"))
    middle = sorted(tmp_path.glob("*.batch"))[1]
    header = middle.read_bytes().split(b"\n", 1)[0]
    middle.write_bytes(header + b"\n[[1, ")
    assert drain(outbox) == [["m0"], ["m2"], [dropped_message(1)]], "the loss is told"
    assert len(list(tmp_path.glob("*.corrupt"))) == 1
