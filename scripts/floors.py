"""The house's floors, written once: the repository's packages from the ground up, and the
domain's own rooms from the ground up.

A package (or a room of the domain) may import the floors below its own and nothing on its
floor or above it. ``tests/unit/test_layers.py`` reads every import statement and holds
the order; ``scripts/generate_docs.py`` writes the floor table of docs/contracts.md from
it, so the page cannot say otherwise. Putting a new package in the house is one line here.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOUSE: tuple[tuple[str, ...], ...] = (
    ("nodemedic",),
    ("agent", "lambdas", "stacks"),
    ("app", "console"),
    ("world",),
    ("bench", "scripts"),
)
"""The repository's packages and top-level modules (``app.py``), ground floor first."""
DOMAIN: tuple[tuple[str, ...], ...] = (
    ("contracts", "backoff"),
    ("catalog", "health", "origin"),
    ("detect", "dumps"),
    ("remediate",),
    ("jobs",),
    ("settings",),
    ("schemas",),
)
"""The rooms of ``nodemedic``, ground floor first: the names every process shares and the
backoff every retrying process waits by, then what reads a node (the catalog, health
verdicts, proof of origin), what reads its lines and dumps, what decides and remediates,
the job monitor, the cluster settings (which gather every floor's knobs) and the schemas
generated from them."""
MODULES = ("app",)
"""The floors that are one module, not a package."""
Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    """Every module of the floors, by dotted name."""
    files: list[Path] = []
    for name in (package for floor in HOUSE for package in floor):
        files += [ROOT / f"{name}.py"] if name in MODULES else sorted((ROOT / name).rglob("*.py"))
    return {module_name(path): path for path in files}


def imports(name: str, path: Path, known: Container[str]) -> set[str]:
    """The modules ``name`` imports, wherever the statement is (at the top, in a function,
    under ``if TYPE_CHECKING``: an import in a function only puts a cycle off until run
    time); ``from p import m`` names the module ``p.m`` where ``known`` has one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
    return found


@cache
def module_graph() -> Graph:
    """Each module and the modules it imports, read once per process."""
    modules = sources()
    return {name: imports(name, path, modules) for name, path in modules.items()}


def level(floors: tuple[tuple[str, ...], ...], room: str) -> int:
    """The floor ``room`` stands on, 0 the ground."""
    return next(number for number, floor in enumerate(floors) if room in floor)


def below(floors: tuple[tuple[str, ...], ...], room: str) -> tuple[str, ...]:
    """What ``room`` may import: every room of the floors under its own."""
    return tuple(r for floor in floors[: level(floors, room)] for r in floor)


def room_of(module: str, depth: int) -> str:
    """The room a dotted module name is in: its first ``depth`` parts' last one."""
    parts = module.split(".")
    return parts[depth - 1] if len(parts) >= depth else ""


HOLDS: dict[str, tuple[str, str]] = {
    "contracts": (
        "every name that crosses a process boundary: log group and stream names, environment "
        "variables, metric names, ledger keys, labels, taints, conditions",
        "everywhere",
    ),
    "backoff": (
        "full-jitter backoff, which the agent's shipper and the classifier's starts wait by",
        "agent, Lambda",
    ),
    "catalog": (
        "the fault catalog: rules as data by family, the loader, the rule file's JSON Schema "
        "(`rules.schema.json`)",
        "Lambda, agent, CLI, synth",
    ),
    "health": (
        "health verdicts the agent and triage share: the health result line, nvidia-smi's "
        "rules, the device count, the instance type → devices table (`make instance-devices`), "
        "the GPU reset's rules and its node-side script (`gpu-reset.py`, shipped through SSM)",
        "agent, CLI, synth",
    ),
    "origin": (
        "proof of origin: AWS's identity certificates, the identity document, line signing",
        "Lambda, agent",
    ),
    "detect": (
        "kernel log formats, the classifier, the subscription filter generator",
        "Lambda (classifier only), agent, CLI, synth",
    ),
    "dumps": ("the dumps triage reads, one module per format, recognised by content", "CLI"),
    "remediate": (
        "the batch logic (lines → decisions started), decision records, the remediation "
        "policy, the ledger rules, the breaker, the phases' one order",
        "Lambda, synth, CLI",
    ),
    "jobs": ("job log monitoring: rules, monitor, job breaker, records, auto-resume", "Lambda"),
    "settings": (
        "every cluster setting, declared once (`settings/cluster.py`: type, default, bounds, "
        "doc), its checks and its parser",
        "synth, CLI, the local world",
    ),
    "schemas": (
        "the JSON Schemas of the rule files and the settings, generated (`make generated`)",
        "a developer's machine",
    ),
    "nodemedic": ("the domain: the rooms above", "everywhere"),
    "agent": (
        "the node agent (`nodemedic agent`, `nodemedic inject`); health checks in "
        "`agent/checks/`, deep checks in `agent/deepcheck/`",
        "the node",
    ),
    "lambdas": (
        "Lambda handlers only (thin: parse, call the domain, return), one folder per function; "
        "each reads its environment through one typed model, `<function>/env.py`; what two "
        "functions share lives beside them (`lambdas/*.py`), never in a handler",
        "Lambda",
    ),
    "stacks": (
        "CDK constructs and stacks; the remediation state machine in `stacks/remediation/` "
        "(`phases/`, `kit/`, `machines/`)",
        "`cdk synth`",
    ),
    "app": ("the CDK app: one stack per cluster of the settings", "`cdk synth`"),
    "console": (
        "the one command line (`console/cli/`), the backtest (`console/backtest/`), the "
        "dashboard's drawing (`console/dashboard/`), reading the files people hand over "
        "(`console/inputs.py`)",
        "people's machines",
    ),
    "world": (
        "the local world (extra `local`): moto as AWS, a real Kubernetes control plane, "
        "simulated kubelets, the demo",
        "a laptop, the tests",
    ),
    "bench": ("benchmarks (`make bench`)", "a developer's machine"),
    "scripts": (
        "generators run by hand (`make xid-rules`, `make instance-devices`, `make generated`) "
        "and this order",
        "a developer's machine",
    ),
}
"""What each room holds and where it runs: the floor table of docs/contracts.md."""
