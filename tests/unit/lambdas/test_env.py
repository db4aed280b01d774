"""Each function's environment model: what the stack sets reads as typed values, what it may
leave unset keeps the handler's old default, and a missing or malformed variable is an
error naming it, raised by the first invocation after a cold start."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from lambdas.classify.env import ClassifyEnv
from lambdas.environment import EnvError, cached
from lambdas.jobs.env import JobsEnv
from lambdas.kube.client import ClientConfigError, ClusterAccess
from lambdas.kube.env import KubeEnv
from lambdas.observability import ObservabilityEnv
from nodemedic.contracts import env
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.jobs.breaker import JobLimits
from nodemedic.settings import ClusterSettings

CLASSIFY = {
    env.ENV_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:remediate",
    env.ENV_IDEMPOTENCY_TABLE: "idempotency",
}
JOBS = {env.ENV_LEDGER_TABLE: "ledger", env.ENV_EKS_CLUSTER: "trn-prod-eks"}


def test_the_classifier_reads_what_the_stack_sets() -> None:
    found = ClassifyEnv.from_environ(
        {
            **CLASSIFY,
            env.ENV_ACCEPT_INJECTED: "true",
            env.ENV_PROOF_OF_ORIGIN: "audit",
            env.ENV_GPU_RESET: "true",
            env.ENV_STALE_AFTER: "600",
            env.ENV_IDENTITY_CERTIFICATES: "PEM",
            env.ENV_LEDGER_TABLE: "ledger",
        }
    )
    assert found == ClassifyEnv(
        state_machine_arn=CLASSIFY[env.ENV_STATE_MACHINE_ARN],
        idempotency_table="idempotency",
        accept_injected=True,
        enforce_origin=False,
        gpu_reset=True,
        stale_after=600,
        identity_certificates="PEM",
        ledger_table="ledger",
    )


def test_the_classifier_settings_left_unset_are_the_safe_ones() -> None:
    found = ClassifyEnv.from_environ(CLASSIFY)
    assert (found.accept_injected, found.enforce_origin, found.gpu_reset) == (False, True, False)
    assert (found.identity_certificates, found.ledger_table) == ("", None)
    assert found.stale_after == ClusterSettings.stale_after, "no deployment acts on old lines"


@pytest.mark.parametrize("value", ["0", "-5", "1e3", "nan", "", "٣"])
def test_a_stale_after_that_is_no_whole_number_of_seconds_is_named(value: str) -> None:
    with pytest.raises(EnvError, match=env.ENV_STALE_AFTER):
        ClassifyEnv.from_environ({**CLASSIFY, env.ENV_STALE_AFTER: value})


@pytest.mark.parametrize("name", [env.ENV_STATE_MACHINE_ARN, env.ENV_IDEMPOTENCY_TABLE])
@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_required_variable_is_named(name: str, value: str | None) -> None:
    environ = {k: v for k, v in CLASSIFY.items() if k != name}
    if value is not None:
        environ[name] = value
    with pytest.raises(EnvError, match=f"^{name} is not set"):
        ClassifyEnv.from_environ(environ)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (env.ENV_ACCEPT_INJECTED, "yes"),
        (env.ENV_ACCEPT_INJECTED, "True"),
        (env.ENV_PROOF_OF_ORIGIN, "Audit"),
        (env.ENV_PROOF_OF_ORIGIN, ""),
    ],
)
def test_a_malformed_setting_is_named_not_taken_for_a_default(name: str, value: str) -> None:
    with pytest.raises(EnvError, match=f"^{name}={value!r} is none of"):
        ClassifyEnv.from_environ({**CLASSIFY, name: value})


def test_the_job_monitor_reads_what_the_stack_sets() -> None:
    limits = {"restarts_per_window": 2, "monitor_only": True}
    found = JobsEnv.from_environ(
        {
            **JOBS,
            env.ENV_CLUSTER: "trn-prod",
            env.ENV_TOPIC_ARN: "arn:aws:sns:us-east-1:123456789012:nodemedic",
            env.ENV_JOB_BREAKER: json.dumps(limits),
        }
    )
    assert found == JobsEnv(
        cluster="trn-prod",
        ledger_table="ledger",
        topic_arn="arn:aws:sns:us-east-1:123456789012:nodemedic",
        limits=JobLimits.from_mapping(limits),
        access=ClusterAccess(kubeconfig="", eks_cluster="trn-prod-eks"),
    )
    unset = JobsEnv.from_environ(JOBS)
    assert (unset.cluster, unset.topic_arn, unset.limits) == ("", None, JobLimits())


@pytest.mark.parametrize(
    ("breaker", "why"),
    [
        ("{", "Expecting"),
        ("[1]", "not a JSON object"),
        ('{"silence": 0}', "silence must be an integer >= 1"),
        ('{"restarts": 2}', "unknown job breaker settings"),
    ],
)
def test_a_malformed_job_breaker_is_named(breaker: str, why: str) -> None:
    with pytest.raises(EnvError, match=f"^{env.ENV_JOB_BREAKER}: .*{why}"):
        JobsEnv.from_environ({**JOBS, env.ENV_JOB_BREAKER: breaker})


def test_the_job_monitor_needs_its_ledger() -> None:
    with pytest.raises(EnvError, match=f"^{env.ENV_LEDGER_TABLE} is not set"):
        JobsEnv.from_environ({env.ENV_EKS_CLUSTER: "trn-prod-eks"})


@pytest.mark.parametrize("model", [KubeEnv, JobsEnv])
def test_a_function_that_talks_to_the_cluster_needs_to_know_which(
    model: type[KubeEnv] | type[JobsEnv],
) -> None:
    with pytest.raises(ClientConfigError, match=r"set KUBECONFIG .* or EKS_CLUSTER_NAME"):
        model.from_environ({env.ENV_LEDGER_TABLE: "ledger"})
    assert issubclass(ClientConfigError, EnvError)


def test_a_kubeconfig_wins_over_eks() -> None:
    found = KubeEnv.from_environ(
        {env.ENV_KUBECONFIG: "/k", env.ENV_EKS_CLUSTER: "eks", env.ENV_CLUSTER: "demo"}
    )
    assert found == KubeEnv(ClusterAccess(kubeconfig="/k", eks_cluster="eks"), "demo", None)


def test_only_the_ops_that_keep_records_need_the_kube_functions_ledger() -> None:
    assert KubeEnv.from_environ({**JOBS}).ledger("silent") == "ledger"
    unset = KubeEnv.from_environ({env.ENV_EKS_CLUSTER: "eks"})
    with pytest.raises(EnvError, match=f"^{env.ENV_LEDGER_TABLE} is not set"):
        unset.ledger("silent")


def test_the_metrics_namespace_defaults_to_the_pipelines() -> None:
    assert ObservabilityEnv.from_environ({}).metrics_namespace == METRICS_NAMESPACE
    custom = {env.ENV_METRICS_NAMESPACE: "Elsewhere"}
    assert ObservabilityEnv.from_environ(custom).metrics_namespace == "Elsewhere"


def test_a_model_is_parsed_once_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str | None] = []

    def from_environ(environ: Mapping[str, str]) -> str | None:
        parsed.append(environ.get("NODEMEDIC_TEST_SETTING"))
        return parsed[-1]

    accessor = cached(from_environ)
    monkeypatch.setenv("NODEMEDIC_TEST_SETTING", "a")
    assert (accessor(), accessor()) == ("a", "a")
    monkeypatch.setenv("NODEMEDIC_TEST_SETTING", "b")
    assert accessor() == "b"
    assert parsed == ["a", "b"]
