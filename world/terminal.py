"""The terminal while the local world runs: its parts print a lot (Lambda handler logs,
moto's notes on the state machine's Choice states) to file descriptors 1 and 2. The
demo and the benchmark send that to a log file and write their own lines to copies of
the terminal's descriptors."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def copy_of(stream: TextIO) -> TextIO:
    """A stream on a copy of ``stream``'s descriptor, unaffected by ``chatter_to``."""
    return os.fdopen(os.dup(stream.fileno()), "w", buffering=1)


@contextlib.contextmanager
def chatter_to(path: Path) -> Iterator[None]:
    """Point descriptors 1 and 2 at ``path`` while the block runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in enumerate(saved, start=1):
            os.dup2(copy, fd)
            os.close(copy)
