"""Every environment variable the stack sets on a function is read by its code, and every
one the handlers read is set by the stack or is a documented override: a setting that is
set and never read (or read and never set) is a knob that silently does nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from nodemedic.contracts import env
from stacks.bundling import bundled_files
from tests.support.paths import ROOT
from tests.support.templates import Template, resources

OVERRIDES = {
    env.ENV_KUBECONFIG: "the local world and the tests point the kube Lambda at a file",
    env.ENV_CATALOG_EXTRA: "set by the stack only when extra rule files are configured",
}
"""Variables the bundled code reads that the default stack does not set, and why."""
LIBRARY_PREFIXES = ("POWERTOOLS_",)
"""Read by the libraries the handlers use, not by our code."""


def _environment_reads(path: Path) -> set[str]:
    """Names of the variables ``path`` reads through ``os.environ[...]`` or
    ``os.environ.get(...)``, resolving ``env.ENV_*`` constants."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            key = node.slice
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.get":
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
        elif isinstance(key, ast.Name) and key.id.startswith("ENV_"):
            found.add(getattr(env, key.id))
    return found


def _set_by_stack(template: Template) -> dict[str, set[str]]:
    """Function handler → the variables the stack sets on it."""
    return {
        function["Properties"]["Handler"]: set(
            function["Properties"].get("Environment", {}).get("Variables", {})
        )
        for function in resources(template, "AWS::Lambda::Function").values()
    }


def _read_by_bundle() -> set[str]:
    return {
        name
        for path in bundled_files()
        if path.suffix == ".py"
        for name in _environment_reads(ROOT / path)
    }


def test_every_variable_the_stack_sets_is_read(template: Template) -> None:
    read = _read_by_bundle()
    for handler, names in _set_by_stack(template).items():
        ours = {n for n in names if not n.startswith(LIBRARY_PREFIXES)}
        assert ours <= read, (handler, sorted(ours - read))


def test_every_variable_the_handlers_read_is_set_or_a_documented_override(
    template: Template,
) -> None:
    set_somewhere = set().union(*_set_by_stack(template).values())
    unset = _read_by_bundle() - set_somewhere - set(OVERRIDES)
    assert unset == set()


def test_the_reads_are_found(tmp_path: Path) -> None:
    """The scanner sees both spellings, literal and contract constant."""
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nfrom nodemedic.contracts.env import ENV_EKS_CLUSTER\n"
        "a = os.environ['A']\nb = os.environ.get(ENV_EKS_CLUSTER)\n"
    )
    assert _environment_reads(module) == {"A", "EKS_CLUSTER_NAME"}
