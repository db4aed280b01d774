"""The classify function's environment (``lambdas.environment``): the state machine it
starts, its tables, and the cluster settings that cap what a line may do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.environment import EnvError, cached, one_of, required, seconds
from nodemedic.contracts.env import (
    ENV_ACCEPT_INJECTED,
    ENV_CLUSTER,
    ENV_GPU_RESET,
    ENV_IDEMPOTENCY_TABLE,
    ENV_IDENTITY_CERTIFICATES,
    ENV_LEDGER_TABLE,
    ENV_PROOF_OF_ORIGIN,
    ENV_STALE_AFTER,
    ENV_STATE_MACHINE_ARN,
    HYPERPOD_EVENTS_ENV,
    HYPERPOD_LOG_GROUPS_ENV,
)
from nodemedic.settings import ClusterSettings


@dataclass(frozen=True)
class ClassifyEnv:
    state_machine_arn: str
    idempotency_table: str
    accept_injected: bool
    """``accept_injected_faults``: unset is off, as the setting's default is."""
    enforce_origin: bool
    """``proof_of_origin``: unset enforces, so a missing setting never lets a forged line act."""
    gpu_reset: bool
    """``gpu_reset``: unset is off, as the setting's default is."""
    stale_after: int
    """``stale_after``: unset is the setting's default, so no deployment acts on old lines."""
    identity_certificates: str
    """PEM; empty: AWS's vendored certificates."""
    ledger_table: str | None
    """Where the agents' heartbeats are recorded; None: nowhere (the stack always sets it,
    the tests of the classifier alone need not)."""
    hyperpod_log_groups: frozenset[str] = frozenset()
    """The HyperPod cluster log groups whose events are classified; any other is refused."""
    hyperpod_act: bool = False
    """``NODEMEDIC_HYPERPOD_EVENTS`` is ``act``: HyperPod's unproven events act where the origin is
    enforced. Unset notifies, so no forged detection acts unless the cluster says so."""
    cluster: str = ""
    """The cluster's name: a HyperPod log group does not say it, a nodemedic one does."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ClassifyEnv:
        return cls(
            state_machine_arn=required(environ, ENV_STATE_MACHINE_ARN),
            idempotency_table=required(environ, ENV_IDEMPOTENCY_TABLE),
            accept_injected=one_of(environ, ENV_ACCEPT_INJECTED, ("true", "false"), "false")
            == "true",
            enforce_origin=one_of(environ, ENV_PROOF_OF_ORIGIN, ("enforce", "audit"), "enforce")
            == "enforce",
            gpu_reset=one_of(environ, ENV_GPU_RESET, ("true", "false"), "false") == "true",
            stale_after=seconds(environ, ENV_STALE_AFTER, ClusterSettings.stale_after),
            identity_certificates=environ.get(ENV_IDENTITY_CERTIFICATES, ""),
            ledger_table=environ.get(ENV_LEDGER_TABLE) or None,
            hyperpod_log_groups=_log_groups(environ),
            hyperpod_act=one_of(environ, HYPERPOD_EVENTS_ENV, ("notify", "act"), "notify") == "act",
            cluster=environ.get(ENV_CLUSTER, ""),
        )


def _log_groups(environ: Mapping[str, str]) -> frozenset[str]:
    """The listed HyperPod log groups; listing any without the cluster's name is an error,
    since their decisions would name no cluster."""
    groups = frozenset(g.strip() for g in environ.get(HYPERPOD_LOG_GROUPS_ENV, "").split(","))
    groups -= {""}
    if groups and not environ.get(ENV_CLUSTER):
        raise EnvError(f"{HYPERPOD_LOG_GROUPS_ENV} lists log groups and {ENV_CLUSTER} is not set")
    return groups


env = cached(ClassifyEnv.from_environ)
