"""A tool that streams one report per line on its stdout, run as a child of the agent.

The reading thread hands each line to ``on_line``; the tool's stderr is discarded (its
own verbosity is off by default). When the agent exits the pipe closes and the tool dies
of SIGPIPE at its next report. ``ensure`` starts it again if it
exited, so a crashed tool is back within one check interval.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)
MAX_LINE = 16 * 1024 * 1024
"""A report of a large instance is ~100 KB; a line this long is not a report."""


class ReportStream:
    def __init__(self, command: Sequence[str], on_line: Callable[[bytes], None]) -> None:
        self.command = list(command)
        self._on_line = on_line
        self._process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ensure(self) -> None:
        """Start the tool unless it runs; raises OSError when it cannot be started."""
        if self.running():
            return
        if self._process is not None:
            log.warning(
                "%s exited (%s); starting it again", self.command[0], self._process.returncode
            )
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.starts += 1
        threading.Thread(
            target=self._read, args=(self._process,), name="report-stream", daemon=True
        ).start()

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        stdout = process.stdout
        assert stdout is not None
        with stdout:
            for line in iter(lambda: stdout.readline(MAX_LINE), b""):
                if line.strip():
                    self._on_line(line)
        process.wait()
