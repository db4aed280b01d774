"""The last words of the boot that died: the kernel log records pstore kept.

When a node panics (a fatal machine check, a hard lockup, an oops with panic_on_oops) the
kernel dumps the tail of its log into persistent storage (EFI variables, ACPI ERST,
ramoops), and the next boot shows each record as a file under ``/sys/fs/pstore``
(``dmesg-efi-<id>``, ``dmesg-erst-<id>``, ``dmesg-ramoops-0``, ``console-ramoops-0``).
The ring buffer the agent reads after the reboot holds none of it, so at start the agent
ships every such file once, in the kmsg stream, each line behind
``contracts.PREVIOUS_BOOT_MARK``: the classifier records and notifies those faults but
never acts on them again on the new boot.

The files are never deleted: systemd-pstore (or an operator) owns them and archives them.
What was shipped is remembered in the state dir by the digest of each file's content, not
its name, because ramoops reuses ``dmesg-ramoops-0`` for the next crash.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from agent.checkpoint import write_atomically
from nodemedic.contracts.logs import previous_boot_message, shipped_message
from nodemedic.detect.logformat import message_of

log = logging.getLogger(__name__)

RECORD_PREFIXES = ("dmesg-", "console-")
"""Records that hold kernel log text; the others (``mce-``, ``ftrace-``, ``pmsg-``) do not."""
MAX_RECORD_BYTES = 1024 * 1024
"""More than any backend keeps per record; a larger file is read up to this much."""


class Dump(NamedTuple):
    name: str
    digest: str
    messages: list[str]
    """The event texts, marked previous-boot, in the file's order."""


def read_dumps(directory: Path, boot_id: str | None, shipped: set[str]) -> Iterator[Dump]:
    """The kernel log records in ``directory`` whose content is not in ``shipped``, sorted
    by name; ``boot_id`` is the boot that logged them, if known."""
    try:
        paths = sorted(p for p in directory.iterdir() if p.name.startswith(RECORD_PREFIXES))
    except OSError as exc:  # no pstore on this node, or not mounted in the pod
        log.info("no pstore records read from %s: %s", directory, exc)
        return
    for path in paths:
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_RECORD_BYTES)
        except OSError as exc:
            log.warning("pstore record %s unreadable: %s", path, exc)
            continue
        digest = hashlib.sha256(raw).hexdigest()
        if digest in shipped:
            continue
        messages = []
        for line in raw.decode("utf-8", "backslashreplace").splitlines():
            parsed = message_of(line)
            if parsed is not None:
                messages.append(
                    previous_boot_message(shipped_message(parsed.text, parsed.facility), boot_id)
                )
        yield Dump(path.name, digest, messages)


class ShippedDumps:
    """The digests of the pstore records already shipped, kept in the state dir."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> set[str]:
        try:
            return set(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return set()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{self.path}: unreadable ({exc}); move it away") from exc

    def add(self, digests: list[str]) -> None:
        write_atomically(self.path, json.dumps(sorted(self.load() | set(digests))).encode())
