"""Log files as people hand them over → lines, for ``triage`` and the backtest alike.

A node's logs arrive as they were kept: plain, gzipped by logrotate (``kern.log.2.gz``), or
piped on stdin (``-``). Both commands read them here, so a format one reads the other reads
too. A file is recognised as gzip by its first bytes, not its name.

A file is read a block at a time and handed on line by line, so a log of any length costs
the same memory and the first fault is told before the last line is read. A node that died
hard leaves its syslog with runs of NUL bytes where the filesystem had allocated blocks the
kernel never wrote, and a line cut mid-character or garbled can sit among good ones: the NUL
bytes are dropped and a line that is not text is passed over (its number kept), each
counted, so the Xid line written just before the crash is still read. Only a file in which
no line at all is text is refused as binary data.
"""

from __future__ import annotations

import gc
import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import cast

STDIN = "-"
"""The path that names standard input."""
_GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 20
"""Bytes read at a time; also the most of one line kept (a longer one is cut there: the
classifier reads 8 KiB of a line, and a file without newlines must not fill memory)."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]|\r(?!\n)")
"""Characters no log line holds: control characters other than tab, the ANSI escape of a
serial console's colours and the carriage return of a CRLF line end."""
_CONTROL_BYTES = bytes(
    [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F, 0x0D]
)
_NOT_CONTROL = bytes(sorted(set(range(256)) - set(_CONTROL_BYTES)))
"""The bytes other than ``_CONTROL``'s characters and the carriage return: deleting them
from a block says at C speed whether it may hold a control character at all (UTF-8 encodes
every character below 0x80 as that byte alone), which a regex search costs a line's
classification to say. Only a block with some left (a CRLF file) is searched."""


YOUNG_OBJECTS = 100_000
"""Objects made and not yet freed that set off a collection while a stream is judged
(Python's default: 700)."""


@contextmanager
def few_collections() -> Iterator[None]:
    """The cyclic collector run less often while lines stream by. A chunk's lines, findings
    and matches live until the chunk is told, so at the default threshold each is walked by
    two or three collections that free nothing (refcounting frees them): 6.6 % of what a
    fault-dense line costs (callgrind). Memory stays bounded: a collection still comes every
    ``YOUNG_OBJECTS`` objects."""
    threshold = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


class InputError(Exception):
    """An input that cannot be used; the message is one line for the user."""


def _open(path: str) -> io.BufferedIOBase:
    """The input's bytes; ``LogFile`` closes the file (a context manager cannot, as it
    outlives this call)."""
    if path == STDIN:
        return cast(io.BufferedIOBase, sys.stdin.buffer)
    try:
        stream: io.BufferedIOBase = Path(path).open("rb")  # noqa: SIM115
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return stream


def _is_text(line: str) -> bool:
    return _CONTROL.search(line.removesuffix("\r")) is None


class LogFile:
    """One input, opened for reading line by line; use as a context manager (``with``).

    ``lines()`` yields every line of the file once, without its newline; a line that is
    not text (undecodable or holding control characters) is yielded empty, so that the
    numbers of the lines after it still point into the file. ``nul_bytes`` and
    ``skipped_lines`` say what was passed over, read so far.
    """

    def __init__(self, path: str, read_size: int = _BLOCK) -> None:
        self.path = path
        self._read_size = read_size
        """Bytes asked of the file at a time: less than a block where many files are open
        at once (a line is still cut at a block only)."""
        self.nul_bytes = 0
        self.skipped_lines = 0
        self.text_lines = 0
        self.lines_read = 0
        self._raw = _open(path)
        head = self._peek()
        self._stream: io.BufferedIOBase = self._raw
        if head == _GZIP_MAGIC:
            self._stream = gzip.GzipFile(fileobj=self._raw, mode="rb")
        self._blocks = self._decoded()
        self._first: list[str] | None = None

    def __enter__(self) -> LogFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self.path != STDIN:
            self._raw.close()

    def _peek(self) -> bytes:
        """The first bytes, left to be read again (a stand-in stdin may lack ``peek``)."""
        if not isinstance(self._raw, io.BufferedReader):
            self._raw = io.BufferedReader(cast(io.RawIOBase, self._raw))
        try:
            return self._raw.peek(2)[:2]
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read: {exc.strerror or exc}") from None

    def _read(self) -> bytes:
        """What the input has now, up to a block: a pipe's lines are told as they come."""
        try:
            return self._stream.read1(self._read_size)
        except (OSError, EOFError, zlib.error) as exc:
            if self._stream is self._raw:
                raise InputError(f"{self.path}: cannot read: {exc}") from None
            raise InputError(f"{self.path}: a damaged gzip file: {exc}") from None

    def _chunks(self) -> Iterator[bytes]:
        """The file in blocks that end at a newline (the last one may not), without NULs."""
        rest = b""
        while block := self._read():
            if b"\0" in block:
                cleaned = block.replace(b"\0", b"")
                self.nul_bytes += len(block) - len(cleaned)
                block = cleaned
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0 and len(block) < _BLOCK:
                rest = block
                continue
            if cut == 0:  # a line longer than a block: cut there
                block, cut = block + b"\n", len(block) + 1
            rest = block[cut:]
            yield block[:cut]
        if rest:
            yield rest + b"\n"

    def _decoded(self) -> Iterator[list[str]]:
        """Each block's lines; the common block (UTF-8 text, no control character) is
        decoded and checked whole, another line by line."""
        for chunk in self._chunks():
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                lines = [self._line(raw) for raw in chunk[:-1].split(b"\n")]
            else:
                lines = text[:-1].split("\n")
                if chunk.translate(None, _NOT_CONTROL) and _CONTROL.search(text) is not None:
                    lines = [line if self._counted(_is_text(line)) else "" for line in lines]
            self.lines_read += len(lines)
            self.text_lines += len(lines) - lines.count("")
            yield lines

    def _line(self, raw: bytes) -> str:
        if not raw:
            return ""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            line = ""
        return line if self._counted(bool(line) and _is_text(line)) else ""

    def _counted(self, text: bool) -> bool:
        self.skipped_lines += not text
        return text

    def head(self) -> str:
        """The text of the file's first block (a dump is recognised by its start)."""
        if self._first is None:
            self._first = next(self._blocks, [])
        return "\n".join(self._first)

    def lines(self) -> Iterator[str]:
        self.head()
        assert self._first is not None
        yield from self._first
        self._first = []
        for block in self._blocks:
            yield from block

    def text(self) -> str:
        """The whole file as one text, for the formats read whole (a dump)."""
        return "\n".join(self.lines())

    def refuse_binary(self) -> None:
        """InputError when the file held bytes and none of its lines was text."""
        if not self.text_lines and (self.nul_bytes or self.skipped_lines):
            raise InputError(f"{self.path}: binary data, not a kernel log ({self.skipped()})")

    def skipped(self) -> str:
        """What was passed over, for people; empty when nothing was."""
        parts = []
        if self.nul_bytes:
            parts.append(f"{self.nul_bytes} NUL bytes")
        if self.skipped_lines:
            parts.append(f"{self.skipped_lines} lines that are not text")
        return " and ".join(parts) + " skipped" if parts else ""
