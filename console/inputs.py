"""Log files as people hand them over → text, for ``triage`` and the backtest alike.

A node's logs arrive as they were kept: plain, gzipped by logrotate (``kern.log.2.gz``), or
piped on stdin (``-``). Both commands read them here, so a format one reads the other reads
too. A file is recognised as gzip by its first bytes, not its name, and binary data or text
that is not UTF-8 is refused rather than reported on as if it were a log.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from pathlib import Path

STDIN = "-"
"""The path that names standard input."""
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_UNDECODABLE = 0.01


class InputError(Exception):
    """An input that cannot be used; the message is one line for the user."""


def _bytes(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == STDIN else Path(path).read_bytes()
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_text(path: str) -> str:
    """The text of the file at ``path`` (``-``: stdin), gunzipped when it is gzip."""
    data = _bytes(path)
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: a damaged gzip file: {exc}") from None
    if b"\0" in data[:65536]:
        raise InputError(f"{path}: binary data, not a kernel log (dmesg, journalctl -k, kmsg)")
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) * _MAX_UNDECODABLE):
        raise InputError(f"{path}: not text in UTF-8, not a kernel log")
    return text
