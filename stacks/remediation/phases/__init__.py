"""The remediation flow, phase by phase: one decision record in, a healed or recorded node out.

One module per phase, each a function of the ``Flow`` (``stacks.remediation.kit``) and the
states it goes on to. ``states`` builds them in the order ``nodemedic.remediate.phases``
gives, back to front, each by its entry in ``BUILDERS`` with the first state of the next
phase (and of any later one it may skip to: a held or monitored node goes on to the
report). JSONPath query language, native integrations everywhere except the Kubernetes API
(the kube Lambda) and the date arithmetic States Language cannot do (the policy Lambda):

1. intake (``intake``): the deep check's verdicts (``deepcheck``), "Valid decision?" and
   "Ours?", "Record decision", the node group, the last reboot for this fault, "Plan"
   (mode notify | monitor | act, escalation, breaker limit), the fault's metric. notify
   (an application fault): report only, no lock; one deferred to HyperPod's own recovery
   finds the node's jobs and waits for HyperPod's repair first (``deferred``), for the
   report to resume them.
2. fleet sighting (``fleet.sight``): an acting decision's node joins its fault's window.
3. lock (``lock``): "Take node lock", one remediation per node; a second decision for a
   node in flight ends as "Duplicate" (and flags a recurrence if the node was already
   rebooted for the same fault), or, stronger, as "Upgraded" (``upgrade``: the reboot in
   flight becomes a replacement). monitor (recovery_mode None, dry_run, a group outside
   ``node_groups``): label and condition only.
4. fleet gate (``fleet.gate``): a fleet event declared already, or declared by this
   sighting (``fleet.declare``), holds the node before the breaker (``fleet.hold``).
4a. quarantine (``quarantine``): a reset, reboot or replace of a line the node's agent
   shipped marks the Node at once (condition, label, taint, cordon), under the quarantine
   limit of its group and cluster per window; refused, the limit trips (a page,
   ``QuarantineTripped``) and the node waits untouched.
5. breaker admission (``breaker``): act only once admitted into the group's slots; held
   decisions wait, sweeping stale holders once a minute (``sweep``); a quarantined one reads
   its fleet window every round (given back if it was declared a fleet event) and is given
   back if held too long.
6. fleet recheck (``fleet.recheck``): a decision the breaker held reads its window again.
7. mark (``mark``), 8. drain (``drain``; the jobs to resume found first, ``resume``).
9. fleet judgement (``fleet.judge``): the window settles and is judged.
9a. approval (``approval``): where the plan says so (the node group's ``approval``, else
    the cluster's), the request is mailed and the flow waits for ``nodemedic approve|deny``
    (or the group's ``approval_timeout``).
10. reboot or replace (``repair``): ``reset`` (``gpu_reset`` on: one GPU reset through SSM
    Run Command, the node given back once it verifies, else rebooted), ``reboot`` (watch for
    a new boot id, escalate to replace when none comes, the fault recurs or a stronger
    decision upgraded it) or ``replace``
    (a spare into service first, ``spares``; SetInstanceHealth Unhealthy, wait for
    termination, delete the Node).
11. report (``report``): the jobs resumed, metrics, SNS, the ledger record closed.
12. release (``release``): the slot and the lock given back.

Any failure on the way goes to ``failure``: the ledger and the Node say where it stopped,
SNS says so, and the execution ends in "Remediation failed". A node taken out of service
stays locked and counted by the breaker (``nodemedic.remediate.parking``); otherwise the
lock is released.

Metrics (namespace NodeMedic, dimensions Cluster and NodeGroup): ``Remediations`` (plus
``Action``, ``Outcome`` and ``Substrate``) and ``RemediationSeconds`` per decision,
``BreakerHeld`` per hold, ``InRemediation`` (the group's breaker holders, a gauge
published at every admission and release) and ``FaultToActionSeconds`` (the fault's
``first_seen`` to the cordon); the fault's own catalog metric in its namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate.phases import (
    APPROVAL,
    BREAKER_ADMISSION,
    DRAIN,
    FLEET_GATE,
    FLEET_JUDGEMENT,
    FLEET_RECHECK,
    FLEET_SIGHTING,
    INTAKE,
    LOCK,
    MARK,
    PHASES,
    QUARANTINE,
    REBOOT_OR_REPLACE,
    RELEASE,
    REPORT,
)
from stacks.remediation.kit.flow import Flow
from stacks.remediation.phases.approval import approval
from stacks.remediation.phases.breaker import admit
from stacks.remediation.phases.drain import drain
from stacks.remediation.phases.failure import failure
from stacks.remediation.phases.fleet.declare import declaring
from stacks.remediation.phases.fleet.gate import gate
from stacks.remediation.phases.fleet.hold import hold
from stacks.remediation.phases.fleet.judge import judge
from stacks.remediation.phases.fleet.recheck import recheck
from stacks.remediation.phases.fleet.sight import sight
from stacks.remediation.phases.intake import intake
from stacks.remediation.phases.lock import lock
from stacks.remediation.phases.mark import mark
from stacks.remediation.phases.quarantine import quarantine_phase
from stacks.remediation.phases.release import release
from stacks.remediation.phases.repair import reboot_or_replace
from stacks.remediation.phases.report import report


class Wiring:
    """What a phase is built with besides the next phase: the flow, the later phases, and
    the states off the line that several phases go to, each built once."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.failure = failure(flow, substrate=flow.settings.other_substrates)
        self.built: dict[str, sfn.IChainable] = {}

    def later(self, phase: str) -> sfn.IChainable:
        """The first state of ``phase``, built already: a phase skips forward only."""
        return self.built[phase]

    @cached_property
    def fleet_hold(self) -> sfn.IChainable:
        return hold(self.flow, report=self.later(REPORT))

    @cached_property
    def fleet_declare(self) -> sfn.IChainable:
        return declaring(self.flow, hold=self.fleet_hold)


Builder = Callable[[Wiring, sfn.IChainable], sfn.IChainable]
"""A phase's states, built with the first state of the next phase; its first state."""

BUILDERS: Final[Mapping[str, Builder]] = {
    INTAKE: lambda w, then: intake(w.flow, report=w.later(REPORT), act=then),
    FLEET_SIGHTING: lambda w, then: sight(w.flow, then=then),
    LOCK: lambda w, then: lock(w.flow, report=w.later(REPORT), failure=w.failure, act=then),
    FLEET_GATE: lambda w, then: gate(w.flow, hold=w.fleet_hold, declare=w.fleet_declare, then=then),
    QUARANTINE: lambda w, then: quarantine_phase(w.flow, then=then),
    BREAKER_ADMISSION: lambda w, then: admit(
        w.flow, report=w.later(REPORT), fleet_hold=w.fleet_hold, admitted=then
    ),
    FLEET_RECHECK: lambda w, then: recheck(w.flow, hold=w.fleet_hold, then=then),
    MARK: lambda w, then: mark(w.flow, then),
    DRAIN: lambda w, then: drain(w.flow, failure=w.failure, act=then),
    FLEET_JUDGEMENT: lambda w, then: judge(w.flow, declare=w.fleet_declare, then=then),
    APPROVAL: lambda w, then: approval(w.flow, then=then, failure=w.failure),
    REBOOT_OR_REPLACE: lambda w, then: reboot_or_replace(w.flow, report=then, failure=w.failure),
    REPORT: lambda w, then: report(w.flow, then=then),
    RELEASE: lambda w, then: release(w.flow, "Finally ", then, best_effort=False),
}
"""Each phase of ``PHASES`` and how it is built, and no other."""


def states(flow: Flow) -> sfn.IChainable:
    """The flow's first state: the phases built back to front, the last one ending in
    "Done", and every guarded task's errors routed to the failure phase."""
    wiring = Wiring(flow)
    then: sfn.IChainable = sfn.Succeed(flow.scope, "Done")
    for phase in reversed(PHASES):
        then = wiring.built[phase] = BUILDERS[phase](wiring, then)
    flow.catch_all(wiring.failure)
    return then
