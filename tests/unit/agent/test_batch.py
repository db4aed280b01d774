"""Batches stay inside the PutLogEvents limits, so the service never rejects a whole batch."""

from __future__ import annotations

from agent.batch import (
    EVENT_OVERHEAD,
    MAX_AGE_MS,
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    MAX_BATCH_SPAN_MS,
    MAX_EVENT_BYTES,
    MAX_MESSAGE_BYTES,
    Batch,
    Batcher,
    clamp_ms,
    truncate,
    utf8_size,
)
from agent.checkpoint import Checkpoint


def fill(batcher: Batcher, events: list[tuple[int, str]]) -> list[Batch]:
    closed = [b for ts, m in events if (b := batcher.add(ts, m)) is not None]
    last = batcher.flush()
    return closed + ([last] if last else [])


def test_at_most_ten_thousand_events() -> None:
    batches = fill(Batcher("s"), [(1, "x")] * 25_001)
    assert [len(b.events) for b in batches] == [MAX_BATCH_EVENTS, MAX_BATCH_EVENTS, 5_001]


def test_byte_limit_counts_26_bytes_per_event_and_utf8_size() -> None:
    message = "é" * 500  # 1000 bytes in UTF-8, 500 characters
    batches = fill(Batcher("s"), [(1, message)] * 2000)
    per_event = 1000 + EVENT_OVERHEAD
    fits = MAX_BATCH_BYTES // per_event
    assert len(batches[0].events) == fits
    assert batches[0].size == fits * per_event <= MAX_BATCH_BYTES
    assert sum(len(b.events) for b in batches) == 2000
    assert all(b.size <= MAX_BATCH_BYTES for b in batches)


def test_a_batch_can_be_filled_exactly_to_the_limit() -> None:
    largest = [(1, letter * MAX_MESSAGE_BYTES) for letter in "abcd"]  # 4 x 256 KB = 1 MiB
    batches = fill(Batcher("s"), [*largest, (1, "e")])
    assert [len(b.events) for b in batches] == [4, 1]
    assert batches[0].size == MAX_BATCH_BYTES
    assert [m for _, m in batches[0].events] == [m for _, m in largest], "none cut"


def test_no_batch_spans_more_than_24_hours() -> None:
    start = 1_700_000_000_000
    batches = fill(
        Batcher("s"),
        [(start, "a"), (start + MAX_BATCH_SPAN_MS, "b"), (start + MAX_BATCH_SPAN_MS + 1, "c")],
    )
    assert [[m for _, m in b.events] for b in batches] == [["a", "b"], ["c"]]


def test_timestamps_never_go_backwards_in_a_stream() -> None:
    batcher = Batcher("s", max_events=2)
    batches = fill(batcher, [(100, "a"), (90, "b"), (95, "c"), (200, "d")])
    stamps = [ts for b in batches for ts, _ in b.events]
    assert stamps == [100, 100, 100, 200]


def test_an_oversized_message_is_cut_with_a_visible_marker() -> None:
    two_mb = "x" * (2 * 1024 * 1024)
    (batch,) = fill(Batcher("s"), [(1, two_mb)])
    ((_, shipped),) = batch.events
    assert utf8_size(shipped) + EVENT_OVERHEAD == MAX_EVENT_BYTES == 256 * 1024
    assert shipped.startswith("x" * 1000)
    assert shipped.endswith(
        f"[nodemedic: truncated, {2 * 1024 * 1024} bytes, first {len(shipped.split(' [')[0])} kept]"
    )
    assert batch.size <= MAX_BATCH_BYTES


def test_truncation_never_splits_a_character() -> None:
    cut = truncate("€" * 100, limit=80)  # 3 bytes each
    assert utf8_size(cut) <= 80
    assert cut.startswith("€") and "\ufffd" not in cut


def test_batch_carries_the_position_of_its_last_record() -> None:
    batcher = Batcher("s")
    batcher.add(1, "a", Checkpoint("boot", 7, 70))
    batcher.add(2, "b", Checkpoint("boot", 8, 80))
    batch = batcher.flush()
    assert batch is not None and batch.cursor == Checkpoint("boot", 8, 80)


def test_timestamps_are_clamped_to_what_the_service_accepts() -> None:
    now = 1_800_000_000_000
    assert clamp_ms(now + 10_000, now) == now
    assert clamp_ms(now - MAX_AGE_MS - 1, now) == now - MAX_AGE_MS
    assert clamp_ms(now - 5, now) == now - 5
