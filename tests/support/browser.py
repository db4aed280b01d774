"""A page as people see it: Debian's headless chromium (``make chromium``) takes a
screenshot, and a pure-Python PNG reader gives its pixels, so a test can check the picture,
not the markup.

No network: the browser is pointed at a proxy that does not exist and resolves no name, so
a page that fetched anything would show it missing.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 90.0
"""Seconds a screenshot may take (a cold chromium on a busy machine takes a few)."""
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}
"""Colour type → bytes per pixel at 8 bits: RGB, RGBA (what chromium writes)."""

RGB = tuple[int, int, int]


def screenshot(page: Path, png: Path, *, width: int, height: int) -> Path:
    """``page`` rendered at ``width`` by ``height`` CSS pixels, one image pixel each."""
    _chromium(page, f"--window-size={width},{height}", f"--screenshot={png}")
    return png


def _chromium(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        raise RuntimeError("chromium is not installed: run `make chromium`")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                binary,
                "--headless",
                "--no-sandbox",  # root, in a container: the sandbox needs user namespaces
                "--disable-gpu",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                "--no-first-run",
                "--disable-extensions",
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--user-data-dir={profile}",
                *flags,
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )


def dump_dom(page: Path, *, width: int, height: int) -> str:
    """The page's DOM after its scripts ran, laid out at ``width`` by ``height``: a test
    adds a script that measures what it sees and writes the result into the page."""
    return _chromium(page, f"--window-size={width},{height}", "--dump-dom").stdout


@dataclass(frozen=True)
class Picture:
    width: int
    height: int
    rows: list[bytes]
    """Unfiltered scanlines."""
    channels: int

    def pixel(self, x: int, y: int) -> RGB:
        at = x * self.channels
        r, g, b = self.rows[y][at : at + 3]
        return r, g, b


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes, step: int) -> bytes:
    for i in range(len(line)):
        left = line[i - step] if i >= step else 0
        up = prior[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            upleft = prior[i - step] if i >= step else 0
            line[i] = (line[i] + _paeth(left, up, upleft)) & 0xFF
    return bytes(line)


def read_png(path: Path) -> Picture:
    """An 8-bit RGB or RGBA, non-interlaced PNG (chromium's screenshots)."""
    data = path.read_bytes()
    if not data.startswith(_SIGNATURE):
        raise ValueError(f"{path}: not a PNG")
    at, idat, header = len(_SIGNATURE), b"", b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"{path}: depth {depth} colour type {colour} interlace {interlace}")
    channels = _CHANNELS[colour]
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    prior = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        if raw[start] == 0:
            prior = raw[start + 1 : start + 1 + stride]
        else:
            line = bytearray(raw[start + 1 : start + 1 + stride])
            prior = _unfilter(raw[start], line, prior, channels)
        rows.append(prior)
    return Picture(width, height, rows, channels)
