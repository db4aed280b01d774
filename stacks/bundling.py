"""The Lambda code asset, built without Docker.

The bundle is the handlers (``lambdas``) and the domain package (``nodemedic``) whole
(``BUNDLED_PACKAGES``), plus the runtime dependencies pinned in
``pyproject.toml`` (the versions the tests ran), minus the AWS SDK the Lambda runtime
already has. pip cross-installs Linux wheels for the Lambda runtime's Python from PyPI;
the installed tree is cached per set of pins, so a second synth copies instead of
downloading. The user's extra catalog files (NODEMEDIC_CATALOG_EXTRA at synth) travel in
the bundle under ``catalog/``, so the classifier matches the rules the subscription
filter, alarms and dashboard were generated from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from nodemedic.contracts.env import ENV_CATALOG_EXTRA

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.X86_64
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
"""Wheels that run on the Lambda runtime's Amazon Linux 2023 (glibc 2.34): google-re2 ships
only manylinux_2_28 wheels for Python 3.14."""
PYTHON_VERSION = RUNTIME.name.removeprefix("python")
PROVIDED_BY_RUNTIME = frozenset({"boto3", "botocore", "s3transfer"})
"""Distributions the Lambda Python runtime ships; a bundled copy would only shadow them."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
_IGNORED = ("__pycache__", "*.pyc", "*.pyo")
BUNDLED_PACKAGES = ("lambdas", "nodemedic")
"""The handlers and the domain they stand on, whole: the Lambda bundle carries these two
packages and nothing else of the repository (not the agent, the stacks, the console or
the local world, which stand above them)."""
TASK_ROOT = "/var/task"
"""Where Lambda unpacks the bundle."""


class BundlingError(RuntimeError):
    """The dependencies could not be installed; the message says what pip said."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> tuple[str, ...]:
    """The project's runtime requirements the Lambda needs: every pin but the AWS SDK."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    kept = []
    for requirement in project["dependencies"]:
        match = _NAME.match(requirement)
        if match is None:
            raise BundlingError(f"cannot read requirement {requirement!r} in {pyproject}")
        if _canonical(match[0]) not in PROVIDED_BY_RUNTIME:
            kept.append(requirement)
    return tuple(kept)


def _pip(*args: str) -> str:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(
            f"pip {args[0]} for the Lambda bundle failed (PyPI must be reachable for the "
            f"first synth; later ones use the cache):\n{result.stderr.strip()}"
        )
    return result.stdout


def _cross_platform() -> list[str]:
    return [
        *(arg for platform in PLATFORMS for arg in ("--platform", platform)),
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
    ]


def resolve(pins: tuple[str, ...]) -> list[str]:
    """``name==version`` of every distribution the pins need on Lambda, minus the SDK."""
    with tempfile.TemporaryDirectory() as scratch:
        # A file, not stdout: pip colours JSON on stdout when the CDK CLI forces colour.
        path = Path(scratch) / "report.json"
        _pip(
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--report",
            str(path),
            *_cross_platform(),
            *pins,
        )
        report = json.loads(path.read_text(encoding="utf-8"))
    return sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in report["install"]
        if _canonical(item["metadata"]["name"]) not in PROVIDED_BY_RUNTIME
    )


def cache_root(name: str) -> Path:
    """``name``'s folder in the project's one cache, where the Go builds live too
    (NODEMEDIC_CACHE, else the user's cache directory)."""
    if root := os.environ.get("NODEMEDIC_CACHE"):
        return Path(root) / name
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodemedic" / name


def dependencies(pins: tuple[str, ...]) -> Path:
    """The installed dependency tree for ``pins``, built once and then reused."""
    key = hashlib.sha256(json.dumps([*PLATFORMS, PYTHON_VERSION, *pins]).encode()).hexdigest()
    target = cache_root("lambda-deps") / key[:16]
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        site = Path(scratch) / "site"
        _pip(
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            "--target",
            str(site),
            *_cross_platform(),
            *resolve(pins),
        )
        # Another synth may have finished the same tree meanwhile; either copy is whole.
        if not target.is_dir():
            site.rename(target)
    return target


def catalog_paths(extra_catalogs: Sequence[Path]) -> list[str]:
    """Where each extra catalog file lies inside the bundle (order kept: it matters)."""
    return [f"catalog/{index}-{path.name}" for index, path in enumerate(extra_catalogs)]


def bundled_files(packages: Sequence[str] = BUNDLED_PACKAGES) -> list[Path]:
    """The repository's files in the bundle, relative to the repository, sorted."""
    found: list[Path] = []
    for name in packages:
        top = ROOT / name
        paths = [top] if top.is_file() else top.rglob("*")
        found += (
            path.relative_to(ROOT)
            for path in paths
            if path.is_file() and not any(path.match(p) or p in path.parts for p in _IGNORED)
        )
    return sorted(found)


def bundle_hash(pins: Sequence[str], extra_catalogs: Sequence[Path]) -> str:
    """Everything the bundle is made of: the packages' files, the pins, the target
    platform and the extra catalogs."""
    digest = hashlib.sha256(json.dumps([*PLATFORMS, PYTHON_VERSION, *pins]).encode())
    for path in bundled_files():
        digest.update(path.as_posix().encode() + b"\0")
        digest.update((ROOT / path).read_bytes())
    for name, path in zip(catalog_paths(extra_catalogs), extra_catalogs, strict=True):
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _LocalPip:
    def __init__(self, pins: tuple[str, ...], extra_catalogs: Sequence[Path]) -> None:
        self.pins = pins
        self.extra_catalogs = tuple(extra_catalogs)

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        out = Path(output_dir)
        shutil.copytree(dependencies(self.pins), out, dirs_exist_ok=True)
        for path in bundled_files():
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / path, out / path)
        for name, path in zip(catalog_paths(self.extra_catalogs), self.extra_catalogs, strict=True):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / name)
        return True


def lambda_code(extra_catalogs: Sequence[Path] = ()) -> lambda_.Code:
    """One asset for every nodemedic function: the handlers share the domain modules."""
    pins = requirements()
    return lambda_.Code.from_asset(
        str(ROOT / "lambdas"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=bundle_hash(pins, extra_catalogs),
        bundling=BundlingOptions(
            # Required by the API; never pulled, the local bundler always bundles (or
            # raises BundlingError).
            image=RUNTIME.bundling_image,
            local=_LocalPip(pins, extra_catalogs),
        ),
    )


def catalog_environment(extra_catalogs: Sequence[Path]) -> dict[str, str]:
    """The classifier's NODEMEDIC_CATALOG_EXTRA pointing at the bundled copies."""
    if not extra_catalogs:
        return {}
    paths = [f"{TASK_ROOT}/{name}" for name in catalog_paths(extra_catalogs)]
    return {ENV_CATALOG_EXTRA: os.pathsep.join(paths)}
