"""Every environment variable the stack sets on a function is read by that function's code,
and every one the handlers read is set by the stack or is a documented override: a setting
that is set and never read (or read and never set) is a knob that silently does nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from nodemedic.contracts import env
from stacks.bundling import BUNDLED_PACKAGES, bundled_files
from tests.support.paths import ROOT
from tests.support.templates import Template, resources

OVERRIDES = {
    env.ENV_KUBECONFIG: "the local world and the tests point the kube Lambda at a file",
    env.ENV_CATALOG_EXTRA: "set by the stack only when extra rule files are configured",
    env.ENV_GPU_RESET: "set by the stack only when gpu_reset is on",
    env.ENV_CLUSTER: "read by the classifier only where HyperPod log groups are listed",
}
"""Variables the bundled code reads that the default stack does not set, and why."""
LIBRARY_PREFIXES = ("POWERTOOLS_",)
"""Read by the libraries the handlers use, not by our code."""
ENVIRONMENTS = ("os.environ", "environ")
"""What the bundle reads variables from: the process environment, and the mapping each
function's environment model is built from (``lambdas.environment``)."""


def _read_key(node: ast.AST) -> ast.expr | None:
    """The name ``node`` reads from an environment, if it is a read: ``<env>[NAME]``,
    ``<env>.get(NAME, ...)`` or ``reader(<env>, NAME, ...)``."""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ENVIRONMENTS:
        return node.slice
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "get"
        and ast.unparse(func.value) in ENVIRONMENTS
        and node.args
    ):
        return node.args[0]
    if len(node.args) >= 2 and ast.unparse(node.args[0]) in ENVIRONMENTS:
        return node.args[1]
    return None


def _environment_reads(path: Path) -> set[str]:
    """Names of the variables ``path`` reads, resolving ``env.ENV_*`` constants."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key = _read_key(node)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
        elif isinstance(key, ast.Name) and key.id.startswith("ENV_"):
            found.add(getattr(env, key.id))
    return found


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _imports(path: Path) -> set[str]:
    """The bundled modules (or names in them) ``path`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return {name for name in names if name.split(".")[0] in BUNDLED_PACKAGES}


def _code_of(handler: str) -> set[Path]:
    """The bundle's files a handler (``module.function``) loads: its module and every
    module it imports, transitively, each with the packages above it."""
    seen: set[Path] = set()
    todo = [handler.rpartition(".")[0]]
    while todo:
        parts = todo.pop().split(".")
        for depth in range(1, len(parts) + 1):
            path = _module_file(".".join(parts[:depth]))
            if path is not None and path not in seen:
                seen.add(path)
                todo.extend(_imports(path))
    return seen


def _reads_of(handler: str) -> set[str]:
    return {name for path in _code_of(handler) for name in _environment_reads(path)}


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


def test_every_variable_the_stack_sets_is_read_by_its_function(template: Template) -> None:
    """By the code the function's handler loads, not merely somewhere in the bundle: a
    variable that one function's model stopped reading fails here even where another
    function's still reads it."""
    for handler, names in _set_by_stack(template).items():
        ours = {n for n in names if not n.startswith(LIBRARY_PREFIXES)}
        assert ours <= _reads_of(handler), (handler, sorted(ours - _reads_of(handler)))


def test_every_variable_the_handlers_read_is_set_or_a_documented_override(
    template: Template,
) -> None:
    set_somewhere = set().union(*_set_by_stack(template).values())
    unset = _read_by_bundle() - set_somewhere - set(OVERRIDES)
    assert unset == set()


def test_the_reads_are_found(tmp_path: Path) -> None:
    """The scanner sees every spelling, literal and contract constant."""
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nfrom nodemedic.contracts.env import ENV_EKS_CLUSTER, ENV_CLUSTER\n"
        "a = os.environ['A']\nb = os.environ.get(ENV_EKS_CLUSTER)\n"
        "def from_environ(environ):\n"
        "    return environ['C'], environ.get('D', ''), required(environ, ENV_CLUSTER)\n"
        "e = Model.from_environ(os.environ)\n"
    )
    assert _environment_reads(module) == {"A", "EKS_CLUSTER_NAME", "C", "D", "NODEMEDIC_CLUSTER"}


def test_a_function_is_judged_by_the_code_it_loads() -> None:
    """The walk of a handler's imports reaches its environment model, and not the models of
    functions it does not load."""
    models = {
        handler: {ROOT / "lambdas" / name / "env.py" for name in ("classify", "jobs", "kube")}
        & _code_of(f"lambdas.{handler}.handler.handler")
        for handler in ("classify", "jobs", "kube")
    }
    assert models == {
        "classify": {ROOT / "lambdas" / "classify" / "env.py"},
        # The job monitor decodes deliveries with lambdas/subscription.py, not the classifier.
        "jobs": {ROOT / "lambdas" / "jobs" / "env.py"},
        "kube": {ROOT / "lambdas" / "kube" / "env.py"},
    }
