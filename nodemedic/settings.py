"""Per-cluster settings, read from the CDK context key ``nodemedic:clusters``.

Every safety knob has its default here, next to its name, so the README and the stack can
quote one place (as medik8s does for its health-check API). A value CloudFormation or the
pipeline would only reject at deploy or run time is refused here, at synth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from functools import cache
from typing import Any, Literal, get_args, get_origin, get_type_hints

from nodemedic import group_settings, settings_json, settings_values
from nodemedic.contracts.logs import node_log_group
from nodemedic.jobs.breaker import JobLimits
from nodemedic.remediate.breaker import Limits
from nodemedic.remediate.fleet import FleetRules
from nodemedic.remediate.policy import Policy, drain_rounds, execution_timeout

CONTEXT_KEY = "nodemedic:clusters"
RecoveryMode = Literal["Automatic", "None"]
ProofOfOrigin = Literal["enforce", "audit"]
EksAutoRepair = Literal["off", "on", "unknown"]
Approval = Literal["none", "replace", "any"]
ApprovalTimeoutDefault = Literal["hold", "proceed"]
LOG_RETENTION_DAYS = settings_values.LOG_RETENTION_DAYS
"""The values CloudWatch Logs accepts for a log group's RetentionInDays."""


class SettingsError(ValueError):
    """Settings that cannot be used; ``errors`` lists every mistake, the message joins them."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ClusterSettings:
    """One monitored cluster and how far nodemedic may act on it."""

    name: str
    """Short name used in resource names and the log group ``/nodemedic/<name>/nodes``."""
    eks_cluster_name: str = ""
    """The EKS cluster the Kubernetes Lambda talks to (defaults to ``name``)."""
    node_groups: tuple[str, ...] = ()
    """Auto Scaling group names nodemedic may reboot or replace instances of."""
    eks_auto_repair: EksAutoRepair = "unknown"
    """Whether EKS node auto repair (the managed node groups' ``nodeRepairConfig``) is on for
    ``node_groups``; synthesis looks nothing up in the account, so it is told. ``on`` is
    refused (both would replace the same nodes), ``unknown`` warns at synth, ``off`` not."""
    recovery_mode: RecoveryMode = "Automatic"
    """``None`` = monitor only: label and condition, no cordon, no reboot or replace."""
    dry_run: bool = False
    """Mark only (label and condition, as recovery mode ``None``) and say in the notification
    what would have been done; nothing is cordoned, drained, rebooted or replaced."""
    accept_injected_faults: bool = False
    """Let kernel log lines the kernel did not write (user-space writes to ``/dev/kmsg``,
    plain lines of a followed file; the agent ships them marked injected) reboot or replace
    nodes like kernel lines. Off, their faults are at most notified: anyone who can write
    to a node's kernel log could otherwise have it rebooted or replaced. For drills and
    the local demo only."""
    proof_of_origin: ProofOfOrigin = "enforce"
    """``enforce``: a reboot or replace acts only on lines signed with the key their
    instance registered with its EC2 identity document; any other is at most notified,
    with the reason. ``audit``: such lines act and are counted (``UnprovenEvidence``), for
    the rollout of signing agents (docs/deploy.md)."""
    identity_certificates: tuple[str, ...] = ()
    """PEM files of the certificates identity documents are verified with; empty: AWS's
    RSA certificates vendored in ``nodemedic/origin/certificates`` (read at synth)."""
    max_unhealthy_percent: int = 20
    """Breaker: no new action while more than this share of a node group is in remediation."""
    max_parallel: int = 2
    """Breaker: at most this many nodes of a node group in remediation at once."""
    drain_timeout: int = 600
    """Seconds of Eviction-API draining; then the remediation fails and the node stays
    cordoned (and people are told), unless ``force_drain`` lets a replacement delete what
    is left."""
    force_drain: bool = False
    """Before a replacement (never before a reboot), delete the pods eviction could not move
    once ``drain_timeout`` is spent, overriding their PodDisruptionBudgets."""
    reboot_timeout: int = 900
    """Seconds to wait for the node to come back Ready with a new boot id before replacing."""
    escalation_window: int = 3600
    """The same fault again within this many seconds after a reboot escalates to replace."""
    breaker_hold: int = 3600
    """Seconds a decision held by the breaker keeps waiting for a free slot before giving up."""
    max_in_flight: int = 10
    """Breaker: at most this many nodes of the whole cluster in remediation (or left out by a
    failed one) at once, across node groups; one more trips the breaker. Per-group limits
    alone let a cluster of many groups lose many nodes at once."""
    reboots_per_hour: int = 6
    """Breaker: reboots started per node group per clock hour; one more trips the breaker."""
    reboots_per_day: int = 24
    """Breaker: reboots started per node group per UTC day; one more trips the breaker."""
    replacements_per_hour: int = 3
    """Breaker: replacements started per node group per clock hour; one more trips the
    breaker. Real hardware failures are rare and independent: more than a few an hour in one
    group is far likelier a false alarm (a driver, a firmware, a job) than broken cards, and
    a replacement cannot be undone."""
    replacements_per_day: int = 12
    """Breaker: replacements started per node group per UTC day; one more trips the breaker."""
    breaker_cooldown: int = 1800
    """Seconds a tripped breaker holds every reboot and replacement of the cluster; then the
    first decision whose limits all have room closes it (one that still hits a limit
    restarts the cooldown). ``nodemedic breaker reset`` closes it at once."""
    poll_seconds: int = 15
    """Interval of the state machine's wait loops (drain retries, reboot watch, breaker)."""
    log_retention_days: int = 30
    """Days CloudWatch Logs keeps the node log group and the Lambdas' logs."""
    notification_emails: tuple[str, ...] = ()
    """Addresses subscribed to the cluster's topic (remediation reports and alarms)."""
    fleet_min_nodes: int = 3
    """Fleet correlation: the same fault on at least this many nodes of a node group within
    ``fleet_window`` is a fleet event (a rollout or a job, not hardware): nothing is rebooted
    or replaced for it, the nodes are given back marked, and one notification lists them.
    At least 2."""
    fleet_min_percent: int = 50
    """... or on at least this share of the node group (and two nodes at least); 0 turns the
    share off and leaves ``fleet_min_nodes``."""
    fleet_window: int = 600
    """Seconds from a fault's first sighting in a group within which later sightings count
    with it; the next sighting after that opens a new window."""
    fleet_settle: int = 60
    """Seconds after a fault's first sighting in a group before any of its nodes may be
    rebooted or replaced: the rest of a storm arrives within it. The cordon and the drain
    do not wait; at most ``fleet_window``."""
    classifier_reserved_concurrency: int = 0
    """Concurrent executions reserved for (and capping) the classify Lambda; 0 reserves none.
    A cap bounds what a flood of log lines (a storm, or an agent credential abused) can
    cost and keeps it from starving the account's other functions."""
    classifier_tracing: bool = False
    """Active X-Ray tracing of the classify Lambda. Off by default: at 1,000 nodes the
    heartbeats alone invoke it ~3 times a second, and Lambda records a trace a second plus
    5 % of the rest whatever the function does, ~$15 per 1,000 nodes a month
    (``bench/cost.py``). Off, it is traced only when its caller's trace is sampled; the
    remediation state machine and the functions it calls stay traced."""
    job_monitoring: bool = False
    """Watch training jobs' logs with their HyperPod-style rules (docs/jobs.md): subscribes
    the job monitor to Container Insights' application log group, which must exist (Fluent
    Bit creates it). Off by default: every container's log line then invokes a Lambda, a
    cost to choose, and a cluster without Container Insights has no such group to deploy on."""
    job_monitor_reserved_concurrency: int = 50
    """Concurrent executions reserved for (and capping) the job monitor (0: none), which every
    container line invokes: a chatty workload cannot take the classify Lambda's capacity."""
    deep_check_timeout: int = 900
    """Seconds a node may wait behind the health-check taint without a deep check verdict
    (from its creation, or from when a reboot put it there); then one notification names it,
    and it stays tainted. The reconcile looks every ``RECONCILE_SECONDS``."""
    post_reboot_deep_check: bool = True
    """After a reboot the node stays cordoned, behind the health-check taint, until its deep
    check passes (the agent's ``--deep-check-at-start``); a failed check replaces it. False:
    the node is given back as soon as it is Ready with a new boot id."""
    gpu_reset: bool = False
    """Faults NVIDIA heals with a GPU reset (the Xid catalog's immediate action RESET_GPU:
    the rules whose action is ``reset``) ask for a reset of the GPU in place instead of a
    reboot, on instance types that can reset one GPU (``nodemedic.health.instance_types``).
    Off: those faults reboot the node, as they always did."""
    job_restarts_per_window: int = 3
    """Job breaker: more job restarts (or failures) in one namespace in ``job_restart_window``
    trip its breaker (one notification): many at once have a cause restarts do not mend."""
    job_cluster_restarts_per_window: int = 10
    """Job breaker: the same across the cluster, sparing a namespace's first (docs/jobs.md)."""
    job_restart_window: int = 600
    """Job breaker: the sliding window of both limits, in seconds."""
    job_breaker_cooldown: int = 1800
    """Seconds a tripped job breaker (a namespace's, or the cluster's) holds restarts."""
    job_log_silence: int = 300
    """Job breaker: when the application log group delivered nothing for this many seconds,
    a verdict the schedule finds (a silence) trips the breaker: the pipe is down, not the
    jobs."""
    history_days: int = 90
    """Days the ledger keeps each remediation's record (its DynamoDB time to live), what
    ``nodemedic history`` shows; locks, breakers and heartbeats are not affected."""
    spares: tuple[tuple[str, int], ...] = ()
    """(node group name, instances kept in Auto Scaling ``Standby`` (running, joined, taking
    no pods) that a replace in that group brings into service in seconds (docs/deploy.md,
    "Spares"); in cdk.json an object, ``{"p5": 1}``. A group not named keeps none: its replace
    waits for a launch, as without."""
    planned_repairs: bool = True
    """Drain and replace instances of ``node_groups`` before AWS's notices say they go."""
    planned_lead_time: int = 3600
    """Seconds before a notice's deadline its planned remediation starts (at once if later)."""
    spot_groups: tuple[str, ...] = ()
    """Groups of ``node_groups`` running Spot: their interruption warnings are planned too."""
    approval: Approval = "none"
    """Which drained nodes wait for a person's ``nodemedic approve`` before the irreversible
    step: ``none`` (act at once), ``replace`` (replacements only: a new instance cannot be
    undone, a reboot can) or ``any`` (reboots too). The request is mailed with the fault,
    its evidence and the planned action."""
    approval_timeout: int = 14400
    """Seconds a drained node waits for an answer before ``approval_timeout_default``."""
    approval_timeout_default: ApprovalTimeoutDefault = "hold"
    """What an unanswered request comes to: ``hold`` (the node stays cordoned and counted,
    as a denial leaves it) or ``proceed`` (the planned action goes on)."""
    actions: tuple[tuple[str, str], ...] = ()
    """(rule id or component, action): what a fault does instead of its catalog's action,
    ``notify``, ``reboot`` or ``replace``; a rule's id wins over its component (``gpu``,
    ``memory``, ...). In cdk.json an object, ``{"edac-uncorrectable": "reboot"}``. A rule
    the catalog only notifies may not be made to act (the synth refuses it); a decision
    the classifier made notify-only (unproven or injected evidence) stays so, and a manual
    or planned decision keeps its action."""
    wait_before_acting: int = 0
    """Seconds a cordoned, marked node waits before its drain and its reboot or replacement
    (the EKS node monitoring agent's ``minRepairWaitTimeMins``, in seconds): its pods keep
    running meanwhile (a training job can checkpoint) and new ones go elsewhere. 0: at once."""
    group_overrides: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    """(node group, its own settings): what a group of ``node_groups`` sets for its nodes of
    the settings ``nodemedic.group_settings.GROUP_SETTINGS`` names. In cdk.json
    ``{"p5-training": {"actions": {"edac-uncorrectable": "reboot"}, "approval": "replace"}}``.
    A group's ``actions`` add to (and win over) the cluster's."""

    def __post_init__(self) -> None:
        errors = settings_values.value_errors(self, choices())
        errors += group_settings.override_errors(self)
        for group, _ in self.group_overrides:
            try:
                self.for_group(group)
            except SettingsError as exc:
                # The cluster's own mistakes are reported once, not again for each group.
                mine = set(errors)
                errors += [f"group_overrides: {group!r}: {e}" for e in exc.errors if e not in mine]
        if errors:
            raise SettingsError(errors)

    def for_group(self, group: str) -> ClusterSettings:
        """The settings a node of ``group`` is remediated with: the cluster's, with what the
        group sets itself (``group_overrides``)."""
        own = {
            key: value
            for key, value in dict(self.group_overrides).get(group, ())
            if key in group_settings.GROUP_SETTINGS
        }
        if not own:
            return self
        if "actions" in own:
            own["actions"] = tuple(sorted({**dict(self.actions), **dict(own["actions"])}.items()))
        return replace(self, group_overrides=(), **own)

    def group_policies(self) -> dict[str, dict[str, Any]]:
        """Each group with settings of its own → its ``Policy``, as the plan is given it."""
        return {
            group: self.for_group(group).policy.to_mapping() for group, _ in self.group_overrides
        }

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
            for own in group_settings.each_group(self)
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


@cache
def choices() -> dict[str, tuple[str, ...]]:
    """Setting → the values it may take, for the settings typed with a ``Literal``."""
    hints = get_type_hints(ClusterSettings)
    return {
        setting.name: get_args(hints[setting.name])
        for setting in fields(ClusterSettings)
        if get_origin(hints[setting.name]) is Literal
    }


@cache
def kinds() -> dict[str, type]:
    """Setting → the type of its value in cdk.json's terms (``name``, without default: str)."""
    return {
        f.name: str if f.default is MISSING else type(f.default) for f in fields(ClusterSettings)
    }


def parse_cluster(raw: Mapping[str, Any]) -> ClusterSettings:
    """Validate one context entry; a typo in a safety knob must fail the synth, not be
    ignored. The ValueError names every mistake of the entry, separated by "; ": a value
    of the wrong type is left out of the checks of values, which report the rest."""
    known = {f.name for f in fields(ClusterSettings)}
    errors = []
    unknown = set(raw) - known
    if unknown:
        errors.append(f"unknown cluster setting(s): {', '.join(sorted(unknown))}")
    if "name" not in raw:
        errors.append("every cluster needs a name")
    wrong_type = settings_json.type_errors(raw, kinds())
    errors += wrong_type.values()
    values = settings_json.plain({k: v for k, v in raw.items() if k in known - set(wrong_type)})
    settings = None
    if "name" in values:
        try:
            settings = ClusterSettings(**values)
        except ValueError as exc:
            errors.append(str(exc))
    if errors or settings is None:
        raise ValueError("; ".join(errors))
    return settings


def parse_clusters(raw: Sequence[Mapping[str, Any]] | None) -> list[ClusterSettings]:
    """Every cluster of the context; the ValueError names every mistake of every cluster,
    one line each (``cluster <n>: ...``, counted from 1)."""
    if raw is not None and not isinstance(raw, list | tuple):
        raise ValueError(f"must be a list of clusters, not {type(raw).__name__}")
    clusters, errors = [], []
    for number, entry in enumerate(raw or (), start=1):
        try:
            clusters.append(parse_cluster(_entry(entry)))
        except ValueError as exc:
            errors.append(f"cluster {number}: {exc}")
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        errors.append("cluster names must be unique")
    if errors:
        raise ValueError("\n".join(errors))
    return clusters


def _entry(entry: Any) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"each cluster is an object with at least a name, not {entry!r}")
    return entry
