"""Synthesized templates kept on disk, shared by every process on the machine.

A synthesis starts jsii's Node.js and loads the CDK library, 10 to 30 CPU-seconds, and every
test process (each pytest worker, each world the demo starts) would pay it again for the
same stack. A template is a pure function of its inputs, so it is kept under a key made of
all of them: the settings, the extra catalog files' contents, every file of the packages
the stack is built from, cdk.json, pyproject.toml (the bundle's pins) and the CDK
libraries' versions. Changing any of them makes a new key, never a stale template.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from nodemedic.settings import ClusterSettings
from stacks.bundling import cache_root

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("nodemedic", "lambdas", "stacks", "cdk.json", "pyproject.toml")
"""What a template is built from, relative to the repository."""
LIBRARIES = ("aws-cdk-lib", "constructs", "cdk-nag")
KEPT_DAYS = 7
"""Templates unread for this long are removed when a new one is written."""


@cache
def source_digest() -> str:
    """The repository's part of every key, read once per process."""
    digest = hashlib.sha256(json.dumps([version(name) for name in LIBRARIES]).encode())
    for name in SOURCES:
        top = ROOT / name
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()


def template_key(settings: ClusterSettings, extra_catalogs: Sequence[Path]) -> str:
    digest = hashlib.sha256(source_digest().encode())
    fields = dataclasses.asdict(settings)
    digest.update(json.dumps(fields, sort_keys=True, default=repr).encode())
    for path in extra_catalogs:
        digest.update(b"\0" + path.read_bytes())
    return digest.hexdigest()


def cached_template(
    settings: ClusterSettings,
    extra_catalogs: Sequence[Path],
    synthesize: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """The template kept for these inputs, else ``synthesize()``'s, kept for the next."""
    directory = cache_root("synth")
    path = directory / f"{template_key(settings, extra_catalogs)}.json"
    try:
        template: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        template = synthesize()
        _keep(directory, path, template)
    else:
        os.utime(path)
    return template


def _keep(directory: Path, path: Path, template: dict[str, Any]) -> None:
    """Written whole or not at all: another process may be reading the same key."""
    directory.mkdir(parents=True, exist_ok=True)
    stale = time.time() - KEPT_DAYS * 86400
    for old in directory.glob("*.json"):
        with contextlib.suppress(FileNotFoundError):  # another process removed it first
            if old.stat().st_mtime < stale:
                old.unlink()
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".part", delete=False) as out:
        json.dump(template, out)
    Path(out.name).replace(path)
