"""What a verdict does to a job: HyperPod's ``runPolicy`` (``jobMaxRetryCount``,
``restartPolicy``, ``cleanPodPolicy``) as arithmetic over the job's restart history.

A verdict first restarts the job's pods (HyperPod's process-level restart); once
``numRestartBeforeFullJobRestart`` of those fell within ``evalPeriodSeconds``, the next is a
full job restart; past ``jobMaxRetryCount`` restarts in all, or ``maxFullJobRestarts`` full
ones, the job is failed. Safety first: a job without a run policy is never restarted (its
``jobMaxRetryCount`` is 0), and failing a job only marks and tells: nodemedic deletes no
job, and its pods stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Final, Literal, get_args

from nodemedic.jobs.rules import RuleError, check_known, load_document

CleanPodPolicy = Literal["All", "OnlyComplete", "None"]
CLEAN_POD_POLICIES: Final[tuple[CleanPodPolicy, ...]] = get_args(CleanPodPolicy)
Action = Literal["restart-pods", "restart-job", "fail"]
RUN_POLICY_FIELDS: Final = (
    "jobMaxRetryCount",
    "restartPolicy",
    "cleanPodPolicy",
    "logMonitoringConfiguration",
)
RESTART_POLICY_FIELDS: Final = (
    "numRestartBeforeFullJobRestart",
    "evalPeriodSeconds",
    "maxFullJobRestarts",
)


@dataclass(frozen=True)
class RestartPolicy:
    num_restart_before_full_job_restart: int
    eval_period_seconds: int
    max_full_job_restarts: int


@dataclass(frozen=True)
class RunPolicy:
    job_max_retry_count: int = 0
    restart_policy: RestartPolicy | None = None
    clean_pod_policy: CleanPodPolicy = "None"
    """Which finished pods a full job restart deletes besides the active ones: ``All``,
    ``OnlyComplete`` (the succeeded ones), ``None``."""


def parse_run_policy(text: str | None, max_retry: str | None = None) -> RunPolicy:
    """The run policy of a ``runPolicy`` annotation (YAML or JSON); ``max_retry`` is the
    ``job-max-retry-count`` annotation, used where the run policy names no count."""
    document = {} if text is None else load_document(text, "runPolicy")
    if not isinstance(document, Mapping):
        raise RuleError(f"runPolicy must be a mapping, got {document!r}")
    check_known(document, RUN_POLICY_FIELDS, "runPolicy")
    retries: object = document.get("jobMaxRetryCount")
    if retries is None and max_retry is not None:
        retries = int(max_retry) if max_retry.strip().isdigit() else max_retry
    clean = document.get("cleanPodPolicy", "None")
    if clean not in CLEAN_POD_POLICIES:
        raise RuleError(
            f"runPolicy: cleanPodPolicy must be one of {', '.join(CLEAN_POD_POLICIES)},"
            f" got {clean!r}"
        )
    restart = document.get("restartPolicy")
    return RunPolicy(
        job_max_retry_count=_count(retries, "jobMaxRetryCount", minimum=0, default=0),
        restart_policy=None if restart is None else _restart_policy(restart),
        clean_pod_policy=clean,
    )


def _restart_policy(raw: object) -> RestartPolicy:
    if not isinstance(raw, Mapping):
        raise RuleError(f"runPolicy: restartPolicy must be a mapping, got {raw!r}")
    check_known(raw, RESTART_POLICY_FIELDS, "restartPolicy")
    missing = [name for name in RESTART_POLICY_FIELDS if name not in raw]
    if missing:
        raise RuleError(f"restartPolicy: {', '.join(missing)} missing")
    return RestartPolicy(
        num_restart_before_full_job_restart=_count(
            raw["numRestartBeforeFullJobRestart"], "numRestartBeforeFullJobRestart", minimum=0
        ),
        eval_period_seconds=_count(raw["evalPeriodSeconds"], "evalPeriodSeconds", minimum=1),
        max_full_job_restarts=_count(raw["maxFullJobRestarts"], "maxFullJobRestarts", minimum=0),
    )


def _count(value: object, name: str, *, minimum: int, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if type(value) is not int or value < minimum:
        raise RuleError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class RestartHistory:
    """A job's restarts so far; kept in the ledger, counted on the job's annotations."""

    pod_restarts: tuple[float, ...] = field(default_factory=tuple)
    """Epoch seconds of each process-level restart since the last full job restart."""
    total_restarts: int = 0
    full_restarts: int = 0
    failed: bool = False

    def as_item(self) -> dict[str, object]:
        return {**asdict(self), "pod_restarts": list(self.pod_restarts)}

    @classmethod
    def from_item(cls, item: Mapping[str, object]) -> RestartHistory:
        times = item.get("pod_restarts") or []
        assert isinstance(times, list)
        return cls(
            pod_restarts=tuple(float(str(t)) for t in times),
            total_restarts=int(str(item.get("total_restarts", 0))),
            full_restarts=int(str(item.get("full_restarts", 0))),
            failed=bool(item.get("failed", False)),
        )


def next_action(policy: RunPolicy, history: RestartHistory, now: float) -> Action:
    """What the next verdict on the job does."""
    if history.failed or history.total_restarts >= policy.job_max_retry_count:
        return "fail"
    restart = policy.restart_policy
    if restart is None:
        return "restart-pods"
    recent = [t for t in history.pod_restarts if now - t <= restart.eval_period_seconds]
    if len(recent) < restart.num_restart_before_full_job_restart:
        return "restart-pods"
    if history.full_restarts >= restart.max_full_job_restarts:
        return "fail"
    return "restart-job"


def after(history: RestartHistory, action: Action, now: float) -> RestartHistory:
    """The history once ``action`` was done at ``now``."""
    if action == "fail":
        return replace(history, failed=True)
    if action == "restart-job":
        return replace(
            history,
            pod_restarts=(),
            total_restarts=history.total_restarts + 1,
            full_restarts=history.full_restarts + 1,
        )
    return replace(
        history,
        pod_restarts=(*history.pod_restarts, now),
        total_restarts=history.total_restarts + 1,
    )
