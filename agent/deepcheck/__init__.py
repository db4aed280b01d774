"""The deep health check: once when a node starts, and on demand (``nodemedic agent
--deep-check``), before the node takes work.

One module per device family (``nvidia``, ``neuron``, ``efa``); each sub-check reports
``ok``, ``fail`` or ``skipped`` with its figures, and a skip names its reason, so a node is
never passed in silence. The last line is the verdict (check ``deep-check``, device
``node``): ``Failed`` when any sub-check failed, ``Passed`` when at least one passed and
none failed, ``NothingChecked`` (``warn``) when nothing could run, which no one may take
for a pass. The lines ship on the stream ``<instance-id>/deep-check``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from agent.deepcheck import efa, neuron, nvidia
from agent.deepcheck.tools import OPTIONS, Node
from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.health.result import Result

__all__ = ["FAMILIES", "OPTIONS", "Node", "run", "verdict"]
FAMILIES: tuple[Callable[[Node], list[Result]], ...] = (
    nvidia.deep_check,
    neuron.deep_check,
    efa.deep_check,
)


def verdict(results: list[Result], ts: str) -> Result:
    counts = Counter(r.status for r in results)
    failed = sorted({r.check for r in results if r.status == "fail"})
    figures: dict[str, int | float | str] = {
        "passed": counts["ok"],
        "failed": counts["fail"],
        "warned": counts["warn"],
        "skipped": counts["skipped"],
    }
    if failed:
        figures["failed_checks"] = ",".join(failed)
        return Result(DEEP_CHECK_VERDICT, "node", "fail", "Failed", figures, ts)
    if counts["ok"]:
        return Result(DEEP_CHECK_VERDICT, "node", "ok", "Passed", figures, ts)
    return Result(DEEP_CHECK_VERDICT, "node", "warn", "NothingChecked", figures, ts)


def run(node: Node) -> list[Result]:
    """Every family's sub-checks, then the verdict."""
    results = [result for family in FAMILIES for result in family(node)]
    return [*results, verdict(results, node.ts)]
