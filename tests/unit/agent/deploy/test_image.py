"""The agent's image (deploy/image/Dockerfile), checked without Docker: its base is pinned
and replaceable, it does not run as root by default, it copies the agent and the domain package
whole and nothing above them, and what it copies runs with its
requirements alone: the tree its COPY lines and its pip install make, rebuilt here from the
same files, imports every agent module and ``python -m agent --help`` works, with neither the
Kubernetes client nor Powertools on the path."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest

from tests.support.paths import ROOT

IMAGE = ROOT / "deploy" / "image"
DOCKERFILE = IMAGE / "Dockerfile"
REQUIREMENTS = IMAGE / "requirements.txt"
FIRST_PARTY = ("agent", "nodemedic", "lambdas", "stacks", "console", "world")
NOT_ON_A_NODE = ("kubernetes", "aws_lambda_powertools", "boto3", "lambdas", "stacks", "console")
"""The Lambdas' dependencies and the packages above the agent: none may reach the image."""


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            keyword, _, arguments = pending.strip().partition(" ")
            found.append(Instruction(keyword.upper(), " ".join(arguments.split())))
            pending = ""
    return found


def of(kind: str) -> list[str]:
    return [i.arguments for i in instructions(DOCKERFILE.read_text()) if i.keyword == kind]


def copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY; none takes another stage's files or flags."""
    found = []
    for arguments in of("COPY"):
        *sources, destination = shlex.split(arguments)
        assert not any(s.startswith("--") for s in sources), arguments
        found.append((sources, destination))
    return found


def ignored(relative: str) -> bool:
    """Whether .dockerignore keeps ``relative`` (or a folder above it) from the builder."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = PurePosixPath(relative).parts
    paths = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(
        fnmatch.fnmatch(path, pattern.removeprefix("**/"))
        or fnmatch.fnmatch(path, "*/" + pattern.removeprefix("**/"))
        if pattern.startswith("**/")
        else fnmatch.fnmatch(path, pattern)
        for pattern in patterns
        for path in paths
    )


def copied_files() -> dict[Path, str]:
    """Every file the COPY lines put in the image: repository path -> image path."""
    found: dict[Path, str] = {}
    for sources, destination in copies():
        assert len(sources) == 1 or destination.endswith("/"), (sources, destination)
        for source in sources:
            path = ROOT / source
            assert path.exists(), f"COPY {source}: no such file"
            if path.is_dir():
                for file in sorted(p for p in path.rglob("*") if p.is_file()):
                    relative = file.relative_to(ROOT).as_posix()
                    if not ignored(relative):
                        found[file] = (
                            f"{destination.rstrip('/')}/{file.relative_to(path).as_posix()}"
                        )
            elif not ignored(source):
                found[path] = (
                    f"{destination}{path.name}" if destination.endswith("/") else destination
                )
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def agent_closure() -> set[str]:
    """The repository's modules the agent imports, at any depth, with their packages."""
    todo = [module_name(p) for p in (ROOT / "agent").rglob("*.py")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        file = module_file(name)
        if name in seen or file is None:
            continue
        seen.add(name)
        todo += [".".join(name.split(".")[:n]) for n in range(1, name.count(".") + 1)]
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            assert not (isinstance(node, ast.ImportFrom) and node.level), f"{file}: relative"
    return {name for name in seen if name.split(".")[0] in FIRST_PARTY}


def pins() -> dict[str, str]:
    found = {}
    for line in REQUIREMENTS.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement:
            name, _, version = requirement.partition("==")
            assert version, f"{requirement}: pin an exact version"
            found[name] = version
    return found


def test_the_base_is_pinned_and_can_be_replaced_by_an_image_with_the_deep_check_tools() -> None:
    steps = instructions(DOCKERFILE.read_text())
    assert [i.keyword for i in steps[:2]] == ["ARG", "FROM"], "ARG BASE_IMAGE, then FROM it"
    assert of("FROM") == ["${BASE_IMAGE}"]
    name, _, default = steps[0].arguments.partition("=")
    assert name == "BASE_IMAGE"
    pinned = re.fullmatch(r"(?P<repo>[^:@]+)(:(?P<tag>[\w.-]+))?(@sha256:[0-9a-f]{64})?", default)
    assert pinned and (pinned["tag"] or "@sha256:" in default), f"{default}: not pinned"
    tag = pinned["tag"] or ""
    assert "latest" not in tag and re.match(r"\d+\.\d+\.\d+-slim", tag), f"{default}: a version"
    # The Python it brings is one the project supports.
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    least = tuple(int(n) for n in wanted.removeprefix(">=").split("."))
    assert tuple(int(n) for n in tag.split(".")[:2]) >= least
    for tool in ("dcgmi", "all_reduce_perf", "neuron-ls", "nccom-test", "fi_info"):
        assert tool in DOCKERFILE.read_text(), f"say where {tool} comes from"


def test_it_does_not_run_as_root_by_default_and_starts_the_agent() -> None:
    (*_, user) = of("USER")
    assert user.split(":")[0] not in ("root", "0"), "the chart raises it where it must"
    assert json.loads(of("ENTRYPOINT")[-1]) == ["python3", "-m", "agent"]


def test_it_copies_the_agent_and_the_domain_whole_and_nothing_above_them() -> None:
    shipped = {module_name(p) for p in copied_files() if p.suffix == ".py"}
    assert agent_closure() - shipped == set(), "the agent imports these: COPY them"
    assert {name.split(".")[0] for name in shipped} == {"agent", "nodemedic"}
    domain = {module_name(p) for p in (ROOT / "nodemedic").rglob("*.py")}
    assert domain - shipped == set(), "the domain package travels whole, as in the Lambdas"
    # Data the copied modules read travels with them; the builds' caches do not.
    targets = set(copied_files().values())
    assert "/opt/nodemedic/src/nodemedic/health/instance_devices.json" in targets
    assert "/opt/nodemedic/src/nodemedic/catalog/rules/xid.yaml" in targets
    assert not any("__pycache__" in t or t.endswith(".pyc") for t in targets)


def test_requirements_are_the_versions_the_tests_ran_with_no_deps_pulled_in() -> None:
    declared = {
        re.split(r"[=<>\[ ]", r)[0].lower(): r
        for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    for name, version in pins().items():
        assert metadata.version(name) == version, f"{name}: tests ran {metadata.version(name)}"
        if name in declared:
            assert declared[name].endswith(f"=={version}"), declared[name]
    (install,) = [run for run in of("RUN") if "pip install" in run]
    assert "--no-deps" in install and "-r /opt/nodemedic/requirements.txt" in install
    target = re.search(r"--target (\S+)", install)
    assert target
    (environment,) = of("ENV")
    assert f":{target[1]}" in environment or f"={target[1]}" in environment


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/opt/nodemedic as the Dockerfile fills it: the COPY lines' files, and the pinned
    distributions as ``pip install --target`` lays them out (from this environment's copies,
    which the test above holds to the same versions)."""
    root = tmp_path_factory.mktemp("image")
    for source, target in copied_files().items():
        destination = root / target.lstrip("/")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)
    lib = root / "opt" / "nodemedic" / "lib"
    for name in pins():
        distribution = metadata.distribution(name)
        for file in distribution.files or ():
            top = file.parts[0]
            if top == ".." or top.endswith((".dist-info", ".data")) or "__pycache__" in file.parts:
                continue
            destination = lib / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(str(distribution.locate_file(file))), destination)
    return root / "opt" / "nodemedic"


IMPORT_ALL = """
import json, pkgutil, sys, importlib
import agent
for found in pkgutil.walk_packages(agent.__path__, "agent."):
    importlib.import_module(found.name)
print(json.dumps({name: getattr(m, "__file__", None) for name, m in sys.modules.items()}))
"""


def in_image(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This interpreter without its site-packages (-S), with the image's PYTHONPATH."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": f"{tree / 'src'}:{tree / 'lib'}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [sys.executable, "-S", *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_agent_runs_on_what_the_image_holds_alone(image_tree: Path) -> None:
    done = in_image(image_tree, "-c", IMPORT_ALL)
    assert done.returncode == 0, done.stderr
    modules: dict[str, str | None] = json.loads(done.stdout)
    tops = {name.split(".")[0] for name in modules}
    assert tops.isdisjoint(NOT_ON_A_NODE), tops & set(NOT_ON_A_NODE)
    assert {"agent.main", "agent.shipper", "botocore.session", "yaml"} <= set(modules)
    stdlib = Path(sys.base_prefix)
    outside = {
        name: file
        for name, file in modules.items()
        if file
        and not Path(file).is_relative_to(image_tree)
        and not Path(file).is_relative_to(stdlib)
    }
    assert outside == {}, "imported from beyond the image"
    helped = in_image(image_tree, "-m", "agent", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--deep-check-at-start" in helped.stdout
