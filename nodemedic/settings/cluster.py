"""The cluster settings, each declared once: its type, default and bounds (``setting(...)``,
``nodemedic.settings.declare``) and, under it, its doc; the substrates' are inherited
(``nodemedic.settings.substrates``), and so are the quarantine's
(``nodemedic.settings.quarantine``). The checks of values, cdk.json's types, the JSON Schema
and docs/deploy.md's table are derived from them (``make generated``; unit tests fail while
a committed one is stale). To add a setting: its declaration (``per_group=True`` where a
group may set its own), a check in ``checks`` where a bound cannot say it, ``make generated``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from nodemedic.contracts.logs import node_log_group
from nodemedic.jobs.breaker import JobLimits
from nodemedic.remediate.breaker import Limits
from nodemedic.remediate.fleet import FleetRules
from nodemedic.remediate.policy import Policy, drain_rounds, execution_timeout
from nodemedic.settings import checks, declare
from nodemedic.settings.checks import (
    EKS_NAME,
    EMAIL,
    GROUP_NAME,
    LOG_RETENTION_DAYS,
    NAME,
    OVERRIDE_ACTIONS,
    SPARE_COUNT,
)
from nodemedic.settings.declare import SettingsError, required, setting
from nodemedic.settings.quarantine import QuarantineSettings
from nodemedic.settings.substrates import SubstrateSettings

RecoveryMode = Literal["Automatic", "None"]
ProofOfOrigin = Literal["enforce", "audit"]
EksAutoRepair = Literal["off", "on", "unknown"]
Approval = Literal["none", "replace", "any"]
ApprovalTimeoutDefault = Literal["hold", "proceed"]


@dataclass(frozen=True)
class ClusterSettings(SubstrateSettings, QuarantineSettings):
    """One monitored cluster and how far nodemedic may act on it."""

    name: str = required(schema={"pattern": NAME.pattern}, checked_by="name_errors")
    """Short name: resource names, log group `/nodemedic/<name>/nodes`, the agent's `--cluster`; a
    letter, then letters, digits and `-`, up to 40 characters."""
    eks_cluster_name: str = setting(
        "", shown="`name`", schema={"pattern": f"^$|{EKS_NAME.pattern}"}, checked_by="name_errors"
    )
    """The EKS cluster the kube Lambda talks to and the agents' Pod Identity association belongs
    to."""
    node_groups: tuple[str, ...] = setting((), schema={"items": GROUP_NAME, "uniqueItems": True})
    """Auto Scaling group names nodemedic may reboot or replace instances of (no `*` or `?`); nodes
    of other groups, and every node while the list is empty (the default), are only labelled and
    reported: never cordoned, drained, rebooted or replaced."""
    eks_auto_repair: EksAutoRepair = setting("unknown")
    """Whether EKS node auto repair (a managed node group's `nodeRepairConfig`) is on for
    `node_groups`; it would reboot or replace the same nodes as nodemedic. The synth looks
    nothing up in your account, so say it: `on` fails the synth naming the groups (turn auto
    repair off for them, or leave them out of `node_groups`); `unknown` with any `node_groups`
    warns at synth; `off`: nothing. Check with `aws eks describe-nodegroup --cluster-name <eks
    cluster> --nodegroup-name <group> --query nodegroup.nodeRepairConfig`."""
    recovery_mode: RecoveryMode = setting("Automatic")
    """`None`: monitor only (label and condition, no cordon, no reboot or replace)."""
    dry_run: bool = setting(False)
    """Record and notify what would be done, change nothing but the node's label and condition."""
    accept_injected_faults: bool = setting(False)
    """Let kernel log lines the kernel did not write (user-space writes to `/dev/kmsg`, `nodemedic
    inject`, plain lines of a followed file: the agent ships them marked injected) cordon,
    drain, reboot or replace nodes; off, such a line's fault is at most notified, and the
    decision says why. For drills and the local demo (which turns it on); see
    [security](security.md)."""
    proof_of_origin: ProofOfOrigin = setting("enforce")
    """A reboot or replace acts only on lines signed with the key their instance registered with
    its EC2 identity document; any other is at most notified, with the reason, and counted in
    `UnprovenEvidence`. `audit`: such lines act and are counted, for the rollout of signing
    agents; see [security](security.md)."""
    identity_certificates: tuple[str, ...] = setting(())
    """PEM files of the certificates identity documents are verified with (read at synth); empty:
    AWS's RSA certificate of the Region the classifier runs in, vendored in
    `nodemedic/origin/certificates` (every Region of the aws, aws-us-gov and aws-cn partitions
    but ap-southeast-6)."""
    stale_after: int = setting(3600, minimum=1)
    """Seconds: a reset, reboot or replace line heard later than this after it was logged (a
    replay, a late delivery) is only notified, as stale: a line's worth is what it says now."""
    max_unhealthy_percent: int = setting(20, minimum=0, maximum=100, per_group=True)
    """Breaker: no new action while more than this share of a node group is in remediation."""
    max_parallel: int = setting(2, minimum=1, per_group=True)
    """Breaker: at most this many nodes of a node group in remediation at once."""
    drain_timeout: int = setting(600, minimum=1, per_group=True)
    """Seconds of Eviction-API draining; then the pods left are deleted only with `force_drain`
    before a replacement, else the remediation fails with the node cordoned."""
    force_drain: bool = setting(False, per_group=True)
    """Before a replacement (never before a reboot), delete the pods eviction could not move once
    `drain_timeout` is spent, overriding their PodDisruptionBudgets; off: the remediation fails,
    the node stays cordoned and the failure is mailed."""
    reboot_timeout: int = setting(900, minimum=1)
    """Seconds to wait for the node to come back Ready with a new boot id before replacing."""
    escalation_window: int = setting(3600, minimum=1, per_group=True)
    """The same fault again within this many seconds after a reboot escalates to replace."""
    breaker_hold: int = setting(3600, minimum=1)
    """Seconds a decision held by the breaker waits for a free slot before giving up."""
    max_in_flight: int = setting(10, minimum=1)
    """Breaker: at most this many nodes of the whole cluster in remediation, or left out by a
    failed one (not by a person's decision, nor an AWS notice's), across node groups; one more
    trips the breaker. Per-group limits alone let a cluster of many groups lose many nodes."""
    reboots_per_hour: int = setting(6, minimum=1)
    """Breaker: reboots started per node group per clock hour; one more trips the breaker."""
    reboots_per_day: int = setting(24, minimum=1)
    """Breaker: reboots started per node group per UTC day (≥ `reboots_per_hour`)."""
    replacements_per_hour: int = setting(3, minimum=1)
    """Breaker: replacements started per node group per clock hour; one more trips the breaker.
    Hardware fails rarely and independently: more than a few an hour in one group is likelier a
    false alarm (a driver, a firmware, a job), and a replacement cannot be undone."""
    replacements_per_day: int = setting(12, minimum=1)
    """Breaker: replacements started per node group per UTC day (≥ `replacements_per_hour`)."""
    breaker_cooldown: int = setting(1800, minimum=1)
    """Seconds a tripped breaker holds every reboot and replacement of the cluster; then the first
    decision whose limits all have room closes it, one that still hits a limit restarts the
    cooldown. `nodemedic breaker reset --cluster <name>` closes it at once."""
    poll_seconds: int = setting(15, minimum=1)
    """Interval of the state machine's wait loops."""
    log_retention_days: int = setting(30, one_of=LOG_RETENTION_DAYS, checked_by="retention_errors")
    """Retention of the node log group and the Lambdas' log groups: one of the values CloudWatch
    Logs accepts, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827,
    2192, 2557, 2922, 3288, 3653."""
    notification_emails: tuple[str, ...] = setting(
        (), schema={"items": {"type": "string", "pattern": EMAIL.pattern}}
    )
    """Addresses subscribed to the topic (each must confirm the e-mail AWS sends)."""
    fleet_min_nodes: int = setting(3, minimum=2, checked_by="FleetRules")
    """Fleet correlation: the same fault on at least this many nodes of a node group within
    `fleet_window` is a fleet event (a rollout or a job, not hardware): none of them is rebooted
    or replaced, they are given back marked (`nodemedic.io/fleet-event=<fault_id>`, condition
    `NodeMedicFleetEvent`) and one mail lists them. Three independent hardware failures of one
    kind in one group within ten minutes are rare; when the rule errs, a sick node stays in
    service, marked, and people are told, which is the cheaper mistake."""
    fleet_min_percent: int = setting(50, minimum=0, maximum=100, checked_by="FleetRules")
    """... or on at least this share of the node group, two nodes at least (0: off,
    `fleet_min_nodes` only)."""
    fleet_window: int = setting(600, minimum=1, checked_by="FleetRules")
    """Seconds from a fault's first sighting in a group within which later sightings count with it;
    the next one after that opens a new window. A job's crash reaches its nodes within seconds,
    a rolling driver or firmware push within minutes."""
    fleet_settle: int = setting(60, minimum=0, upto="fleet_window", checked_by="FleetRules")
    """Seconds after a fault's first sighting in a group before any of its nodes may be rebooted or
    replaced, so that the rest of a storm can show (0..`fleet_window`). The cordon and the drain
    do not wait, so the faulty node takes no new work meanwhile; a reboot or replacement starts
    at most this much later than it did."""
    classifier_reserved_concurrency: int = setting(0, minimum=0, zero="none")
    """Concurrent executions reserved for, and capping, the classify Lambda (0: none reserved); a
    cap bounds what a flood of lines can cost. Set it below the account's unreserved
    concurrency."""
    classifier_tracing: bool = setting(False)
    """Active X-Ray tracing of the classify Lambda; off, it is traced only when its caller's trace
    is sampled (CloudWatch Logs' deliveries never are). On costs ~$15 per 1,000 nodes a month:
    the heartbeats invoke it ~3 times a second per 1,000 nodes, and Lambda records a trace a
    second and 5 % of the rest ([scale.md](scale.md)). The state machine and the functions it
    calls stay traced."""
    job_monitoring: bool = setting(False)
    """Watch training jobs' logs with their HyperPod-style rules ([jobs.md](jobs.md)): subscribes
    the job monitor to Container Insights' `/aws/containerinsights/<cluster>/application` group,
    which must exist first (Fluent Bit creates it); every container line then invokes the job
    monitor, so it is a cost to choose."""
    job_monitor_reserved_concurrency: int = setting(50, minimum=0, zero="none")
    """Concurrent executions reserved for, and capping, the job monitor (0: none reserved; only
    with `job_monitoring`): every container line of the cluster invokes it, and a cap keeps a
    chatty workload's logs from taking the account's unreserved concurrency from the classify
    Lambda. Deliveries past it are throttled and retried by CloudWatch Logs; the account must
    keep 100 unreserved after it."""
    deep_check_timeout: int = setting(900, minimum=1)
    """Seconds a node may wait behind the `nodemedic.io/health-check` taint without a deep check
    verdict (from its creation, or from when a reboot put it there) before one notification
    names it and how long it waited. A new node stays tainted; one a reboot held is given back,
    labelled `Unchecked` (its reboot cleared the fault). The reconcile looks every 5 minutes,
    and tells each wait once (annotation `nodemedic.io/deep-check-overdue`)."""
    post_reboot_deep_check: bool = setting(True)
    """After a reboot the node stays cordoned, behind the `nodemedic.io/health-check` taint and
    `deep-health-check-status=InProgress`, until the deep check its agent runs after the boot
    passes (then it is uncordoned, `Schedulable`; a failed check replaces it; no verdict
    within `deep_check_timeout` gives it back, `Unchecked`). The agent must run with
    `--deep-check-at-start`. `false`: given back as soon as it is Ready with a new boot id."""
    gpu_reset: bool = setting(False)
    """The faults NVIDIA heals with a GPU reset (Xid catalog immediate action `RESET_GPU`: Xid 46,
    62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158; rule action `reset`) decide
    `reset` instead of `reboot`. Off, they reboot the node exactly as before. On, a node whose
    instance type cannot reset one GPU in place is still rebooted ([GPU
    reset](#gpu-reset-a-rung-below-the-reboot))."""
    job_restarts_per_window: int = setting(3, minimum=1)
    """Job breaker: more job restarts (or failures) than this in one namespace within
    `job_restart_window` trip that namespace's breaker, holding its job restarts (no other
    namespace's) with one notification ([jobs.md](jobs.md#the-job-breaker))."""
    job_cluster_restarts_per_window: int = setting(10, minimum=1)
    """Job breaker: more job restarts (or failures) than this across the cluster within
    `job_restart_window` trip the cluster's breaker (one notification), holding each namespace
    that restarted in the window; a namespace's first restart is never held ([jobs](jobs.md))."""
    job_restart_window: int = setting(600, minimum=1)
    """Job breaker: the sliding window of both limits, in seconds."""
    job_breaker_cooldown: int = setting(1800, minimum=1)
    """Seconds a tripped job breaker holds the job restarts it holds (its namespace's, or every
    one)."""
    job_log_silence: int = setting(300, minimum=1)
    """A silent application log group for this long trips the job breaker on the schedule's
    verdicts (a log pipe outage, not hung jobs)."""
    history_days: int = setting(90, minimum=1)
    """Days the ledger keeps each remediation's record (the table's time to live, on decision
    records only): what `nodemedic history` shows."""
    spares: tuple[tuple[str, int], ...] = setting(
        (),
        mapping=("node group names to whole numbers", int),
        schema={"additionalProperties": SPARE_COUNT},
    )
    """Instances kept in Auto Scaling Standby per node group, e.g. `{"p5-train": 1}` (0 to 100
    each, groups from `node_groups`): a replace brings one into service at once and refills the
    pool ([Spares](#spares-capacity-back-in-seconds-after-a-replace))."""
    planned_repairs: bool = setting(True)
    """Act on AWS's advance notices for instances of `node_groups` ([Planned
    repairs](#planned-repairs-before-aws-acts)): a scheduled retirement, system or instance
    reboot for maintenance or stop (AWS Health), a Capacity Block's expiration warning, and, in
    `spot_groups`, a Spot interruption warning. Each becomes a decision of `source` `planned`
    through the same breaker, lock and ledger; nodes of other groups, and every node while
    `node_groups` is empty, are not touched, and `recovery_mode: None` and `dry_run` only label
    them, as for any fault. `false`: no notice is read."""
    planned_lead_time: int = setting(3600, minimum=0)
    """Seconds before a notice's deadline its planned remediation starts (at once when the notice
    comes later than that): cordon, drain, then a replacement (a spare first where the group
    keeps one); a Capacity Block cannot be replaced: its nodes are drained and left to end."""
    spot_groups: tuple[str, ...] = setting(())
    """Groups of `node_groups` running Spot instances: a Spot interruption warning (two minutes'
    notice) of their instances cordons and drains them at once and replaces them."""
    approval: Approval = setting("none", per_group=True)
    """Which drained nodes wait for a person before the irreversible step ([Approval and
    hand-off](#approval-and-hand-off)): `none` acts at once (as before), `replace` asks before a
    replacement, `any` before a reboot or a reset too. The request is mailed; `nodemedic
    approve|deny` answers it."""
    approval_timeout: int = setting(14400, minimum=1, per_group=True)
    """Seconds a drained node waits for an answer; the node lock's lease and the state machine's
    timeout grow by as much where `approval` is not `none`."""
    approval_timeout_default: ApprovalTimeoutDefault = setting("hold", per_group=True)
    """What an unanswered request comes to: `hold` (the remediation fails at `awaiting_approval`,
    error `ApprovalTimeout`: the node stays cordoned, drained and counted by the breaker, as
    after a denial) or `proceed` (the planned action goes on, recorded as `approval_timed_out`)."""
    actions: tuple[tuple[str, str], ...] = setting(
        (),
        mapping=("rule ids or components to actions", str),
        per_group=True,
        schema={"additionalProperties": {"enum": list(OVERRIDE_ACTIONS)}},
    )
    """The action a fault takes instead of its catalog's, by rule id or component (`gpu`, `neuron`,
    `efa`, `memory`, `cpu`, `storage`, `kernel`; a rule's id wins): `notify`, `reboot` or
    `replace`, e.g. `{"edac-uncorrectable": "reboot"}`. A rule the catalog only notifies may not
    be made to act ([Settings per node group](#settings-per-node-group-and-per-fault))."""
    wait_before_acting: int = setting(0, minimum=0, zero="none", per_group=True)
    """Seconds a cordoned, marked node waits before its drain and its reboot or replacement (the
    EKS node monitoring agent's `minRepairWaitTimeMins`, in seconds): its pods keep running
    meanwhile and new ones go elsewhere."""
    group_overrides: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = setting(())
    """Settings a group of `node_groups` sets for its own nodes: `actions`, `wait_before_acting`,
    `drain_timeout`, `max_parallel`, `max_unhealthy_percent`, `escalation_window`, `force_drain`
    ([Settings per node group](#settings-per-node-group-and-per-fault))."""

    def __post_init__(self) -> None:
        errors = self._value_errors()
        for group, _ in self.group_overrides:
            try:
                self.for_group(group)
            except SettingsError as exc:
                # The cluster's own mistakes are reported once, not again for each group.
                mine = set(errors)
                errors += [f"group_overrides: {group!r}: {e}" for e in exc.errors if e not in mine]
        if errors:
            raise SettingsError(errors)

    def _value_errors(self) -> list[str]:
        errors = checks.name_errors(self.name, self.eks_cluster_name)
        errors += declare.bound_errors(self)
        errors += checks.per_day_errors(vars(self))
        try:
            self.fleet_rules  # noqa: B018 (FleetRules refuses impossible fleet settings)
        except ValueError as exc:
            errors.append(str(exc))
        errors += checks.retention_errors(self.log_retention_days)
        errors += checks.node_group_errors(self.node_groups)
        errors += self.substrate_errors(self.node_groups)
        errors += checks.spares_errors(self.spares, self.node_groups)
        errors += checks.spot_errors(self.spot_groups, self.node_groups)
        errors += checks.auto_repair_errors(self.eks_auto_repair, self.node_groups)
        errors += checks.action_errors(self.actions)
        errors += checks.email_errors(self.notification_emails)
        errors += checks.override_errors(self.group_overrides, self.node_groups, GROUP_SETTINGS)
        return errors

    def each_group(self) -> tuple[ClusterSettings, ...]:
        """The cluster's own settings, then those of each group that has settings of its own."""
        return (self, *(self.for_group(group) for group, _ in self.group_overrides))

    def for_group(self, group: str) -> ClusterSettings:
        """The settings a node of ``group`` is remediated with: the cluster's, with what the
        group sets itself (``group_overrides``)."""
        own = {
            key: value
            for key, value in dict(self.group_overrides).get(group, ())
            if key in GROUP_SETTINGS
        }
        if not own:
            return self
        if "actions" in own:
            own["actions"] = tuple(sorted({**dict(self.actions), **dict(own["actions"])}.items()))
        return replace(self, group_overrides=(), **own)

    @property
    def fleet_rules(self) -> FleetRules:
        return FleetRules(
            min_nodes=self.fleet_min_nodes,
            min_percent=self.fleet_min_percent,
            window=self.fleet_window,
            settle=self.fleet_settle,
        )

    @property
    def lock_seconds(self) -> int:
        """The longest any group's remediation runs: the state machine's timeout, the lease."""
        return max(
            execution_timeout(
                breaker_hold=self.breaker_hold,
                drain_timeout=own.drain_timeout,
                reboot_timeout=self.reboot_timeout,
                poll_seconds=self.poll_seconds,
                fleet_settle=self.fleet_settle,
                refill=bool(self.spare_groups),
                wait_before_acting=own.wait_before_acting,
                approval=own.approval_timeout if own.approval != "none" else 0,
            )
            for own in self.each_group()
        )

    @property
    def spare_groups(self) -> list[str]:
        """The node groups that keep at least one spare."""
        return sorted(group for group, count in self.spares if count > 0)

    @property
    def policy(self) -> Policy:
        """What the policy Lambda's ``plan`` is given (the state machine's, the backtest's)."""
        return Policy(
            recovery_mode=self.recovery_mode,
            dry_run=self.dry_run,
            node_groups=self.node_groups,
            max_unhealthy_percent=self.max_unhealthy_percent,
            max_parallel=self.max_parallel,
            escalation_window=self.escalation_window,
            lock_seconds=self.lock_seconds,
            force_drain=self.force_drain,
            history_days=self.history_days,
            actions=self.actions,
            wait_before_acting=self.wait_before_acting,
            drain_timeout=self.drain_timeout,
            drain_rounds=drain_rounds(self.drain_timeout, self.poll_seconds),
            approval=self.approval,
            approval_timeout=self.approval_timeout,
            approval_timeout_default=self.approval_timeout_default,
            **self.substrate_policy(),
        )

    @property
    def breaker_limits(self) -> Limits:
        return Limits(
            max_in_flight=self.max_in_flight,
            reboots_per_hour=self.reboots_per_hour,
            reboots_per_day=self.reboots_per_day,
            replacements_per_hour=self.replacements_per_hour,
            replacements_per_day=self.replacements_per_day,
            cooldown=self.breaker_cooldown,
        )

    @property
    def job_limits(self) -> JobLimits:
        """The job monitor's breaker; ``recovery_mode: None`` and ``dry_run`` hold every
        verdict, as they make every node decision monitor-only."""
        return JobLimits(
            restarts_per_window=self.job_restarts_per_window,
            cluster_restarts_per_window=self.job_cluster_restarts_per_window,
            window=self.job_restart_window,
            cooldown=self.job_breaker_cooldown,
            silence=self.job_log_silence,
            monitor_only=self.recovery_mode == "None" or self.dry_run,
        )

    @property
    def log_group_name(self) -> str:
        return node_log_group(self.name)

    @property
    def kube_cluster(self) -> str:
        return self.eks_cluster_name or self.name


GROUP_SETTINGS: Final = declare.per_group(ClusterSettings)
"""The cluster settings a node group may set for its own nodes."""
