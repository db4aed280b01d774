"""The execution state: what each JSONPath of a remediation's state holds, named once.

Every phase reads and writes the state through these names, never through a path literal.
A top-level field is set by the state that owns it and read by later ones; ``"Begin"``
(``initial_state``) gives the ones a failure or the report may read before their owner ran
a value, so no path a catch-all reaches can be missing.
"""

from __future__ import annotations

from typing import Any, Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate import fleet, ledger, policy
from nodemedic.remediate.ledger import (
    GIVING_BACK_AT,
    HOLDERS,
    RECURRED_AT,
    UPGRADE_FAULT,
    UPGRADED_BY,
)

# The decision record, the execution's input (docs/contracts.md) ---------------------------


def incoming(field: str, source: str = "$") -> str:
    """A field of the input, before ``"Begin"`` moves the record to ``$.decision``; a
    cleanup finds the record at ``source`` of its input (``cleanup.DECISION``)."""
    return f"{source}.{field}"


DECISION: Final = "$.decision"


def decision(field: str) -> str:
    """A field of the decision record."""
    return f"{DECISION}.{field}"


INSTANCE_ID: Final = decision("instance_id")
FAULT_ID: Final = decision("fault_id")
CLUSTER: Final = decision("cluster")

STARTED_AT: Final = "$.started_at"
"""When the execution began (``"Begin"`` entered)."""
RECORD_SK: Final = "$.keys.record"
"""The decision record's sort key, ``decision#<decision_id>``."""
REBOOT_SK: Final = "$.keys.reboot"
"""The reboot marker's sort key, ``reboot#<fault_id>``."""
INSTANCE_IDS: Final = "$.keys.instance_ids"
"""``[instance_id]``: what the Auto Scaling and EC2 calls and the breaker's set take."""

RECORDED: Final = "$.recorded"
"""The GetItem result of the decision's marker (``nodemedic.remediate.recorded``): ``{}``
for a decision that was never recorded."""
RECORDED_AS: Final = "$.recorded_as"
"""``{name, count, schema}``: the execution's name, and the marker's numbers as numbers."""


def recorded(field: str) -> str:
    """A field of the decision's marker, as GetItem gives it (``.S``, ``.N``, ``.BOOL``)."""
    return f"{RECORDED}.Item.{field}"


# Where the node is -------------------------------------------------------------------------

ASG: Final = "$.asg"
"""``{groups}``: the names of the Auto Scaling groups of the instance, none or one (and
``types``, see ``ASG_TYPES``)."""
ASG_GROUPS: Final = f"{ASG}.groups"
ASG_TYPES: Final = f"{ASG}.types"
"""The instance's type, a list of one or none: kept only where ``gpu_reset`` is on."""
GROUP: Final = "$.group"
"""``{name, size, found}``: the instance's node group, ``found`` false when it has none
(then ``name`` is ``policy.NO_GROUP``, the ``NodeGroup`` dimension of its metrics)."""
GROUP_NAME: Final = f"{GROUP}.name"
GROUP_SIZE: Final = f"{GROUP}.size"
TARGET: Final = "$.target"
"""``{substrate, cluster, node_recovery}``: who repairs a node outside every Auto Scaling
group (``nodemedic.remediate.target``); only where a substrate is listed, ``{}`` until found."""
TARGET_CLUSTER: Final = f"{TARGET}.cluster"
HYPERPOD: Final = "$.hyperpod"
"""DescribeCluster's answer, then the policy Lambda's ``{group, node_recovery}`` from it."""
SUBSTRATE: Final = "$.plan.substrate"
"""Who repairs the node (``Substrate``): ``none`` until ``"Plan"`` names it."""
BATCH: Final = "$.batch"
"""A HyperPod batch call's answer: ``{Successful, Failed}``."""
HYPERPOD_WATCH: Final = "$.hyperpod_watch"
"""``{rounds}``: the wait for HyperPod to replace a node."""
NODE: Final = "$.node"
"""The kube ``locate`` op's answer: ``{node, boot_id, ready, nodes}``; ``node`` null if
none, ``nodes`` the cluster's Node count."""
NODE_NAME: Final = f"{NODE}.node"
CLUSTER_NODES: Final = f"{NODE}.nodes"
BOOT_ID: Final = f"{NODE}.boot_id"

# The plan ---------------------------------------------------------------------------------

LAST_REBOOT: Final = "$.last_reboot"
"""``{at}``: when the node was last rebooted for this fault (``{}`` if never), read from the
reboot marker for the plan's escalation rule."""
LAST_REBOOT_ITEM_AT: Final = f"{LAST_REBOOT}.Item.at.S"
"""The marker's ``at`` in the GetItem result, before ``"Rebooted before?"`` reshapes it."""
PLAN: Final = "$.plan"
"""``policy.Plan`` as a mapping: what to do and the numbers the ledger's rules need. Until
``"Plan"`` replaces it, ``{action}`` of the decision, for a failure to report."""


def plan(field: str) -> str:
    return f"{PLAN}.{field}"


MODE: Final = plan("mode")
ACTION: Final = plan("action")
REASON: Final = plan("reason")
LIMIT: Final = plan("limit")
MAX_PARALLEL: Final = plan("max_parallel")
MAX_UNHEALTHY_PERCENT: Final = plan("max_unhealthy_percent")
"""The node group's limits ``LIMIT`` comes from."""
NOW_EPOCH: Final = plan("now_epoch")
LOCK_EXPIRES_EPOCH: Final = plan("lock_expires_epoch")
FORCE_DRAIN: Final = plan("force_drain")
"""Whether the drain may delete what eviction left once ``drain_timeout`` is spent."""
HEALTH_STATUS: Final = plan("health_status")
PLANNED_OUTCOME: Final = plan("outcome")
PURGE_AT: Final = plan("purge_at")
WAIT_BEFORE_ACTING: Final = plan("wait_before_acting")
DRAIN_TIMEOUT: Final = plan("drain_timeout")
DRAIN_ROUNDS_LIMIT: Final = plan("drain_rounds")
"""The node group's ``wait_before_acting``, ``drain_timeout`` and drain loop bound."""
APPROVAL: Final = plan("approval")
APPROVAL_TIMEOUT: Final = plan("approval_timeout")
APPROVAL_TIMEOUT_DEFAULT: Final = plan("approval_timeout_default")
"""Whether the action waits for a person, and the node group's ``approval_timeout`` and
``approval_timeout_default``."""

# The ledger: what this execution holds ------------------------------------------------------

LOCK: Final = "$.lock"
"""``{at}``, present once this execution holds the node lock: the releases look for it."""
SLOT: Final = "$.slot"
"""``{at, holders}``, present once the breaker admitted this execution: ``holders`` is the
group's count of holders then."""
SLOT_HOLDERS: Final = f"{SLOT}.holders"
HOLD: Final = "$.hold"
"""The breaker's hold loop: ``held`` once this decision was held (it is reported once),
``rounds`` waited, ``sweep_at``: the round of the next stale-holder sweep."""
HELD: Final = f"{HOLD}.held"
HOLD_ROUNDS: Final = f"{HOLD}.rounds"
SWEEP_AT: Final = f"{HOLD}.sweep_at"
ADMISSION: Final = "$.admission"
"""``breaker.admission`` of the latest admission attempt: ``{epoch, hour, day, until,
hourly, daily, cap}``, now's rate windows and the action's limits."""
WHY: Final = "$.why"
"""A refused admission's GetItem results: ``{breaker, hour, day}`` (the cluster's breaker and
the two rate windows), for the judgement."""
VERDICT: Final = "$.verdict"
"""``{verdict, reason}``: ``breaker.judge`` of the refused admission."""
VERDICT_REASON: Final = f"{VERDICT}.reason"
BREAKER: Final = "$.breaker"
"""The breaker item as the sweep read it (GetItem result)."""
BREAKER_HOLDERS: Final = f"{BREAKER}.Item.{HOLDERS}.SS"
RELEASED: Final = "$.released"
"""The breaker item after this execution's release (UpdateItem result), then ``{count}``."""
RELEASED_HOLDERS: Final = f"{RELEASED}.Attributes.{HOLDERS}.SS"
RELEASED_COUNT: Final = f"{RELEASED}.count"
LOCK_ITEM: Final = "$.lock_item"
"""The node lock as read (GetItem result): by the remediation holding it once it was told to
escalate, or by a decision that found it held."""
HELD_LOCK: Final = f"{LOCK_ITEM}.Item"
RECURRED: Final = f"{HELD_LOCK}.{RECURRED_AT}"
UPGRADED_BY_DECISION: Final = f"{HELD_LOCK}.{UPGRADED_BY}.S"
UPGRADE_FAULT_ID: Final = f"{HELD_LOCK}.{UPGRADE_FAULT}.S"
GIVING_BACK: Final = f"{HELD_LOCK}.{GIVING_BACK_AT}"
LOCK_WAIT: Final = "$.lock_wait"
"""``{rounds}`` a stronger decision waited for a lock whose remediation gives its node back."""
LOCK_WAIT_ROUNDS: Final = f"{LOCK_WAIT}.rounds"
UPGRADED: Final = "$.upgraded"
"""``{decision_id}``: the remediation in flight that this decision upgraded."""
UPGRADED_DECISION: Final = f"{UPGRADED}.decision_id"

# Fleet correlation (``stacks.remediation.phases.fleet``) ------------------------------------

FLEET: Final = "$.fleet"
"""``{since}``: this sighting counts in a fault's window opened after then (epoch seconds);
then ``{verdict}``, the window's as the sighting left it (``open``, or ``fleet`` once a
fleet event was declared)."""
FLEET_SINCE: Final = f"{FLEET}.since"
FLEET_VERDICT: Final = f"{FLEET}.verdict"
FLEET_READ: Final = "$.fleet_read"
"""The window as read again (GetItem result): after a breaker hold, before acting."""
FLEET_READ_VERDICT: Final = f"{FLEET_READ}.Item.verdict.S"
WINDOW: Final = "$.window"
"""The window as read, reshaped: ``{found, first_at, nodes, verdict}`` (``{found}`` false
when there is none)."""
JUDGED: Final = "$.judged"
"""``fleet.Verdict``: a fleet event or not, or how long to wait for the window to settle."""
JUDGED_WAIT: Final = f"{JUDGED}.wait"
JUDGED_SETTLES_IN: Final = f"{JUDGED}.settles_in"
JUDGED_FLEET: Final = f"{JUDGED}.fleet"
JUDGED_FIRST_AT: Final = f"{JUDGED}.first_at"
JUDGED_COUNT: Final = f"{JUDGED}.count"
JUDGED_NODES: Final = f"{JUDGED}.nodes"
JUDGED_SUMMARY: Final = f"{JUDGED}.summary"
HOLD_REASON: Final = "$.hold_reason"
"""``{text}``: why a node is held for a fleet event, before it becomes the plan's reason."""
HOLD_REASON_TEXT: Final = f"{HOLD_REASON}.text"

# Acting on the node -------------------------------------------------------------------------

STEP: Final = "$.step"
"""``{name, at}``: the phase entered last, what the ledger's ``failed_step`` says."""
STEP_NAME: Final = f"{STEP}.name"
TIMES: Final = "$.times"
"""When each change on the node was made: ``{marked: {at}, drained: {at}, ...}``."""


def time_of(change: str) -> str:
    return f"{TIMES}.{change}"


MARKED_AT: Final = f"{time_of('marked')}.at"

# Quarantine (``stacks.remediation.phases.quarantine``) --------------------------------------

QUARANTINE: Final = "$.quarantine"
"""``quarantine.Limits`` of this decision, and the page's ``reason`` should it be refused."""
QUARANTINE_REASON: Final = f"{QUARANTINE}.reason"
QUARANTINED_AT: Final = time_of("quarantined")
"""``{at}``, present once the quarantine cordoned the node."""

FAULT_TO_ACTION: Final = "$.fault_to_action"
"""``{seconds}`` from the fault line's ``first_seen`` to the cordon."""
FAULT_TO_ACTION_SECONDS: Final = f"{FAULT_TO_ACTION}.seconds"
DRAIN: Final = "$.drain"
"""The drain loop: ``started_at``, ``rounds`` and ``wait`` (seconds, doubling while a
PodDisruptionBudget blocks)."""
DRAIN_STARTED_AT: Final = f"{DRAIN}.started_at"
DRAIN_ROUNDS: Final = f"{DRAIN}.rounds"
DRAIN_WAIT: Final = f"{DRAIN}.wait"
DRAINED: Final = "$.drained"
"""The kube ``drain`` op's answer of the last round."""
DRAIN_DONE: Final = f"{DRAINED}.done"
DRAIN_BLOCKED: Final = f"{DRAINED}.blocked[0]"
DRAINED_PODS: Final = f"{DRAINED}.pods"
JOBS: Final = "$.jobs"
"""The kube ``jobs_on_node`` op's answer before the drain (``jobs``, ``count``): the opted-in
jobs to resume once the node is repaired; the caught error instead when it failed."""
JOBS_COUNT: Final = f"{JOBS}.count"
DEFERRED: Final = "$.deferred"
"""The watch of a node whose repair was deferred to HyperPod (``phases.deferred``):
``rounds`` waited, then ``key`` once HyperPod repaired it (``<instance>:<new boot id>``, or
``<instance>:replaced``): what its jobs are resumed under, once per repair whatever number
of decisions were deferred for it. No ``key``: HyperPod left the node as it was."""
DEFERRED_ROUNDS: Final = f"{DEFERRED}.rounds"
DEFERRED_KEY: Final = f"{DEFERRED}.key"
RESUMED: Final = "$.resumed"
"""The kube ``resume_jobs`` op's answer (``resumed``, ``failed``, ``errors``, ``tell``,
``message``), or the caught error."""
RESUMED_TELL: Final = f"{RESUMED}.tell"
RESUMED_ERROR: Final = f"{RESUMED}.Error"
WATCH: Final = "$.watch"
"""The reboot watch loop: ``rounds`` waited for a new boot id."""
WATCH_ROUNDS: Final = f"{WATCH}.rounds"
NODE_STATUS: Final = "$.status"
"""The kube ``node_status`` op's answer."""
REBOOTED: Final = f"{NODE_STATUS}.rebooted"
NEW_BOOT_ID: Final = f"{NODE_STATUS}.boot_id"
"""The boot the watch saw the node come back with: the one a deep check's pass must be of."""
REBOOTED_AT: Final = f"{time_of('rebooted')}.at"
"""When the reboot was asked for: a deep check passed later ran on the rebooted node."""
GATE: Final = "$.gate"
"""The kube ``hold_for_deep_check`` op's answer, ``{node, since, held}``: ``held`` false when
the check after the boot had passed already, and the node was given back."""
GATE_HELD: Final = f"{GATE}.held"
GPU: Final = plan("gpu")
"""The PCI bus id of the GPU a reset acts on."""
DRAIN_DEVICES: Final = plan("devices")
"""What the drain frees: the reset's GPU, or null for every pod."""
RESET_SINCE: Final = plan("reset_since")
RESET_COMMAND_ID: Final = f"{time_of('reset')}.command_id"
RESET_WATCH: Final = "$.reset_watch"
"""The reset watch loop: ``rounds`` waited for the command to end."""
RESET_WATCH_ROUNDS: Final = f"{RESET_WATCH}.rounds"
RESET_STATUS: Final = "$.reset_status"
"""The reset command's invocation: ``{status, output}`` (SSM's ``Status`` and the last
JSON line the node printed, ``nodemedic.health.gpu_reset``)."""
RESET_STATUS_NAME: Final = f"{RESET_STATUS}.status"
RESET_OUTPUT: Final = f"{RESET_STATUS}.output"
RESET_ERROR: Final = "$.reset_error"
"""``{Error, Cause}``: what SSM refused the reset's command or its status with."""
ESCALATION: Final = "$.escalation"
"""``{escalated, reason}``: why a reboot became a replacement."""
ESCALATION_REASON: Final = f"{ESCALATION}.reason"
TERM: Final = "$.term"
"""The termination watch loop: ``rounds`` waited for the instance to terminate."""
TERM_ROUNDS: Final = f"{TERM}.rounds"
LIFECYCLE: Final = "$.lifecycle"
"""``{states}``: the instance's Auto Scaling lifecycle states (none once it is gone)."""
LIFECYCLE_STATE: Final = f"{LIFECYCLE}.states[0]"
SPARE: Final = "$.spare"
"""The kube ``pick_spare`` op's answer, ``{instance_id, node}``: the spare brought into
service, both null when none was (absent in a group that keeps none)."""
SPARE_INSTANCE: Final = f"{SPARE}.instance_id"
SPARE_NODE: Final = f"{SPARE}.node"
SPARE_TAKEN_AT: Final = f"{time_of('exitStandby')}.at"
"""When the spare left Standby, before the broken instance was set Unhealthy: a Node of the
group created later is the launch that replaced it (the kube ``hold_spare`` op)."""
REFILL: Final = "$.refill"
"""The refill watch loop: ``rounds`` waited for the replacement's Node to join."""
REFILL_ROUNDS: Final = f"{REFILL}.rounds"
NEWCOMER: Final = "$.newcomer"
"""The kube ``hold_spare`` op's answer, ``{instance_id, node}``: the launched replacement
held back as the next spare, both null while none has joined."""
NEWCOMER_INSTANCE: Final = f"{NEWCOMER}.instance_id"
NEWCOMER_NODE: Final = f"{NEWCOMER}.node"
SPARE_ERROR: Final = "$.spare_error"
"""Where a spare step that could not be done leaves its error: the replace goes on."""

# The end ------------------------------------------------------------------------------------

OUTCOME: Final = "$.outcome"
"""``{name}``: rebooted, replaced, notified, held, monitored, ...: the ``Outcome``."""
OUTCOME_NAME: Final = f"{OUTCOME}.name"
ELAPSED: Final = "$.elapsed"
"""``{seconds}`` from ``started_at`` to the report."""
ELAPSED_SECONDS: Final = f"{ELAPSED}.seconds"
ERROR: Final = "$.error"
"""``{Error, Cause}``: a caught error, or a failure a Choice found, shaped alike."""
ERROR_NAME: Final = f"{ERROR}.Error"
RECORD_ERROR: Final = "$.record_error"
RELEASE_ERROR: Final = "$.release_error"
NOTIFY_ERROR: Final = "$.notify_error"
METRIC_ERROR: Final = "$.metric_error"
MARK_ERROR: Final = "$.mark_error"
PARK_ERROR: Final = "$.park_error"
"""Where a best-effort step of the failure phase leaves its own error and goes on."""
CLOCK: Final = "$.clock"
"""``{epoch, lease_until}``: now in epoch seconds as a sweep, a park or a renewal runs, and
the end of a parked lock's lease from then (``Flow.clock``)."""
CLOCK_EPOCH: Final = f"{CLOCK}.epoch"
LEASE_UNTIL: Final = f"{CLOCK}.lease_until"


def initial_state(source: str = "$") -> dict[str, Any]:
    """``"Begin"``'s parameters, over the decision record as input (at ``source``). The
    plan's substrate says ``none`` until ``"Plan"`` names the node's, for a failure to
    record and count (the ``Substrate`` dimension of ``Remediations``)."""

    def field(name: str) -> str:
        return sfn.JsonPath.string_at(incoming(name, source))

    return {
        "decision": sfn.JsonPath.object_at(source),
        "started_at": sfn.JsonPath.state_entered_time,
        "keys": {
            "record": sfn.JsonPath.format(ledger.RECORD_SK, field("decision_id")),
            "reboot": sfn.JsonPath.format(ledger.REBOOT_SK, field("fault_id")),
            "instance_ids": sfn.JsonPath.array(field("instance_id")),
        },
        "group": {"name": policy.NO_GROUP, "size": 0, "found": False},
        "node": {"node": "", "boot_id": ""},
        "step": {"name": "planning"},
        # Until "Plan" replaces it: a failure before it still has an action to report.
        "plan": {"action": field("action"), "substrate": "none"},
        "hold": {"held": False, "rounds": 0, "sweep_at": 1},
        "verdict": {"verdict": "paced", "reason": ""},
        "fleet": {"verdict": fleet.OPEN},
        "lock_wait": {"rounds": 0},
        "escalation": {"escalated": False, "reason": None},
        "times": {},
    }
