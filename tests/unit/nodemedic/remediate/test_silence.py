"""Which Ready nodes are silent, what counts as a heartbeat, and how often one is written."""

from __future__ import annotations

from nodemedic.catalog import load_catalog
from nodemedic.contracts.logs import heartbeat_message, previous_boot_message, shipped_message
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from nodemedic.remediate.silence import Heard, ReadyNode, Recent, newest_heartbeat, silent_nodes

NOW = 1_800_000_000.0
BEAT = heartbeat_message({"interval": 300, "credential_failures": 2})


def test_a_heartbeat_passes_the_filter_and_only_the_agents_own_counts() -> None:
    assert selected(subscription_filter_patterns(load_catalog()), BEAT)
    assert newest_heartbeat(["a kernel line", BEAT]) == {"interval": 300, "credential_failures": 2}
    # Shipped behind the agent's signature, as agents that prove their origin ship it.
    signed = "[signed 0123abcd " + "A" * 22 + "] " + BEAT
    assert newest_heartbeat([signed]) == {"interval": 300, "credential_failures": 2}
    # Written to /dev/kmsg by someone else, or replayed from the boot that died: no heartbeat.
    assert newest_heartbeat([shipped_message(BEAT, 1)]) is None
    assert newest_heartbeat([previous_boot_message(BEAT, "b")]) is None
    assert newest_heartbeat(["nodemedic: heartbeat not json"]) is None


def test_silent_after_three_intervals_since_the_last_beat_or_becoming_ready() -> None:
    old = NOW - 3600
    ready = [
        ReadyNode("talking", "i-1", old),
        ReadyNode("quiet", "i-2", old),
        ReadyNode("never", "i-3", old),
        ReadyNode("joined", "i-4", NOW - 60),
        ReadyNode("told", "i-5", old),
        ReadyNode("fast", "i-6", old),
    ]
    heard = {
        "i-1": Heard(NOW - 400),
        "i-2": Heard(NOW - 901, state={"spool_bytes": 7}),
        "i-5": Heard(NOW - 2000, notified=True),
        "i-6": Heard(NOW - 31, state={"interval": 10}),
    }
    found = {s.node: s for s in silent_nodes(ready, heard, NOW)}
    assert set(found) == {"quiet", "never", "told", "fast"}
    assert found["quiet"].state == {"spool_bytes": 7} and found["quiet"].new
    assert found["never"].last_heard is None and found["never"].new
    assert not found["told"].new, "told once per silence"


def test_one_write_per_node_per_half_interval() -> None:
    recent = Recent()
    assert recent.due("i-1", NOW, 300)
    recent.written("i-1", NOW)
    assert not recent.due("i-1", NOW + 149, 300)
    assert recent.due("i-1", NOW + 150, 300) and recent.due("i-2", NOW, 300)


def test_the_newest_silence_comes_first_so_a_cut_list_keeps_it() -> None:
    old = NOW - 3600
    ready = [ReadyNode(f"a-long-silent-{n}", f"i-{n}", old) for n in range(60)]
    ready.append(ReadyNode("z-just-quiet", "i-quiet", old))
    heard = {"i-quiet": Heard(NOW - 901)}
    found = silent_nodes(ready, heard, NOW)
    assert [s.node for s in found[:2]] == ["z-just-quiet", "a-long-silent-0"]
    assert found[0].since == NOW - 901
