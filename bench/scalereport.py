"""How ``bench.scale`` prints a run's figures, and whether a case ended whole."""

from __future__ import annotations

from typing import Any


def whole(r: dict[str, Any]) -> bool:
    """No error, no failed execution, no node left cordoned without a remediation, and the
    dashboard's outcomes the ledger's."""
    agree = r["ledger_outcomes"] == r["dashboard_outcomes"]
    return bool(r["errors"] == 0 and r["executions_failed"] == 0 and r["stranded"] == 0 and agree)


def report(results: list[dict[str, Any]]) -> None:
    print("nodemedic scale: distinct signed faults on a KWOK world, line written -> node")
    for r in results:
        breaker = (
            "baseline: breaker limits raised" if r["breaker"] == "raised" else "default breaker"
        )
        head = f"{r['failing']} of {r['nodes']}, {breaker}, spread {r['spread_s']:g}s"
        print(f"  {head}")
        for stage in ("cordon", "drained", "repaired"):
            s = r[stage]
            if s["n"]:
                print(
                    f"    -> {stage:<9} p50 {s['p50']:7.2f} s  p90 {s['p90']:7.2f} s  "
                    f"max {s['max']:7.2f} s  ({s['n']} nodes)"
                )
            else:
                print(f"    -> {stage:<9} none")
        last = r["last_cordon_s"]
        print(
            f"    last cordon {'-' if last is None else f'{last:.1f} s'} after the first line; "
            f"faults written in {r['faults_written_s']:.1f} s; decided in {r['decided_s']:.0f} s"
        )
        print(
            f"    executions {r['statuses']}, failed {r['executions_failed']}, errors "
            f"{r['errors']}, breaker {r['breaker_state']}; per node: Lambda "
            f"{r['lambda_per_node']:.1f}, Step Functions calls "
            f"{r['stepfunctions_calls_per_node']:.1f}; a fault's PutLogEvents p50 "
            f"{r['fault_put']['p50'] or 0:.2f} s, max {r['fault_put']['max'] or 0:.2f} s; "
            f"Lambdas running {r['lambda_busy']:.2f} at a time on average"
        )
        steps = ", ".join(f"{name} {at:.1f}" for name, at in r["steps_p50"].items())
        print(f"    the decisions' steps, p50 seconds after the line: {steps or 'none'}")
        print(
            f"    world up {r['world_s']:.0f} s (KWOK Ready {r['kwok_ready_s']:.1f} s), "
            f"{r['nodes']} identities sealed {r['identities_sealed_s']:.1f} s, registered "
            f"{r['registrations_written_s']:.1f} s; mails {r['outcomes']}"
        )
        for failure in r["failures"]:
            print(f"    failed: {failure}")
        print(
            f"    the API server refused {sum(r['kube_refused'].values())} calls "
            f"{r['kube_refused'] or ''} ({r['refused_writes']} writes by its webhook); after the "
            f"storm: {r['stranded']} stranded {r['stranded_nodes'] or ''}, outcomes in the "
            f"ledger {r['ledger_outcomes']}, on the dashboard {r['dashboard_outcomes']}"
        )
        print(
            f"    Step Functions throttled {r['starts_throttled']} starts; the classifier "
            f"counted {sum(r['aws_throttled'].values())} throttled calls "
            f"{r['aws_throttled'] or ''}; {r['deliveries_failed']} deliveries failed and "
            f"were run again, {r['dead_letters']} dead-lettered {r['dead_letter_errors'] or ''}"
        )
