"""The Lambda bundle: the handlers and the domain packages they import, plus the pinned
dependencies, minus the SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodemedic.catalog import FAMILIES
from stacks import bundling
from tests.support.paths import ROOT


def test_the_bundle_pins_what_pyproject_pins_except_the_runtimes_sdk(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = [\n'
        '  "aws-lambda-powertools[tracer]==3.37.0",\n  "boto3==1.44.5",\n'
        '  "Kubernetes==36.0.3",\n  "s3transfer==0.14.0",\n]\n'
    )
    assert bundling.requirements(pyproject) == (
        "aws-lambda-powertools[tracer]==3.37.0",
        "Kubernetes==36.0.3",
    )


def test_the_projects_pins_reach_the_bundle() -> None:
    pins = bundling.requirements()
    assert any(pin.startswith("aws-lambda-powertools") for pin in pins)
    assert any(pin.startswith("kubernetes==") for pin in pins)
    assert not any(pin.startswith("boto3") for pin in pins)


def test_local_bundling_copies_dependencies_and_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "yaml").mkdir(parents=True)
    (site / "yaml" / "__init__.py").write_text("")
    monkeypatch.setattr(bundling, "dependencies", lambda pins: site)
    out = tmp_path / "out"
    out.mkdir()
    rules = tmp_path / "site.yaml"
    rules.write_text("schema: 1\nrules: []\n")
    assert bundling._LocalPip(("pyyaml==6.0.3",), [rules]).try_bundle(str(out))
    assert (out / "yaml" / "__init__.py").exists()
    assert (out / "catalog" / "0-site.yaml").read_text() == rules.read_text()
    assert bundling.catalog_environment([rules]) == {
        "NODEMEDIC_CATALOG_EXTRA": "/var/task/catalog/0-site.yaml"
    }
    for family in FAMILIES:
        assert (out / "nodemedic" / "catalog" / "rules" / f"{family}.yaml").exists()
    assert (out / "lambdas" / "classify" / "handler.py").exists()
    assert not (out / "nodemedic" / "local").exists()
    assert not (out / "nodemedic" / "cli").exists()
    assert not list(out.rglob("__pycache__"))


HANDLERS = tuple(
    f"lambdas.{handler.parent.name}.handler"
    for handler in sorted((ROOT / "lambdas").glob("*/handler.py"))
)
"""Every function's handler, read from the tree: a new function is checked without a line
here."""
_IMPORT_ALL = """
import json, sys
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps({n: getattr(m, "__file__", None) for n, m in sys.modules.items()}))
"""


def test_the_bundle_carries_what_the_handlers_import_and_no_floor_above(tmp_path: Path) -> None:
    """Imported from the bundle alone (the repository off the path), every handler finds
    all of nodemedic's modules it needs there, and the bundle is the handlers and the
    domain, whole: nothing of the agent, the stacks, the console or the local world."""
    out = tmp_path / "bundle"
    for path in bundling.bundled_files():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes((ROOT / path).read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, *HANDLERS],
        cwd=tmp_path,
        env={"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    ours = {
        name: file
        for name, file in json.loads(result.stdout).items()
        if name.split(".")[0] in ("lambdas", "nodemedic", "agent", "stacks")
    }
    assert all(file and file.startswith(str(out)) for file in ours.values()), ours
    imported = {Path(file).relative_to(out) for file in ours.values()}
    bundled = {path for path in bundling.bundled_files() if path.suffix == ".py"}
    assert imported <= bundled
    assert {path.parts[0] for path in bundled} == {"lambdas", "nodemedic"}
    assert {path for path in bundled if path.parts[0] == "nodemedic"} == {
        path.relative_to(ROOT)
        for path in (ROOT / "nodemedic").rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_a_failing_pip_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(bundling.BundlingError, match="PyPI must be reachable"):
        bundling.resolve(("pyyaml==6.0.3",))


def test_the_dependency_tree_is_built_once_per_set_of_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[tuple[str, ...]] = []

    def pip(*args: str) -> str:
        calls.append(args)
        target = Path(args[args.index("--target") + 1])
        (target / "six.py").parent.mkdir(parents=True, exist_ok=True)
        (target / "six.py").write_text("")
        return ""

    monkeypatch.setattr(bundling, "_pip", pip)
    monkeypatch.setattr(bundling, "resolve", lambda pins: ["six==1.17.0"])
    first = bundling.dependencies(("six==1.17.0",))
    second = bundling.dependencies(("six==1.17.0",))
    assert first == second
    assert (first / "six.py").exists()
    assert len(calls) == 1
    assert bundling.dependencies(("six==1.16.0",)) != first


def test_the_policy_function_needs_only_its_own_modules_and_the_standard_library(
    tmp_path: Path,
) -> None:
    from stacks.remediation import POLICY_PACKAGES

    for name in POLICY_PACKAGES:
        source = ROOT / name
        files = [source] if source.is_file() else source.rglob("*.py")
        for path in files:
            copy = tmp_path / path.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    # -I -S: no site-packages, no current directory; only the copies and the stdlib.
    load = "import sys; sys.path.insert(0, '.'); import lambdas.policy.handler"
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", load],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
