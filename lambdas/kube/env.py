"""The kube function's environment (``lambdas.environment``): which cluster it talks to,
and the ledger the ``silent`` op reads the agents' heartbeats from and the gate ops keep
their record in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.environment import EnvError, cached
from lambdas.kube.client import ClusterAccess
from nodemedic.contracts.env import ENV_CLUSTER, ENV_LEDGER_TABLE


@dataclass(frozen=True)
class KubeEnv:
    access: ClusterAccess
    cluster: str
    """The cluster's short name, the dimension of what the function counts."""
    ledger_table: str | None
    """None: only the ``silent`` and gate ops need it (``ledger``), and the stack always sets
    it; the tests of the other ops need not."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> KubeEnv:
        return cls(
            ClusterAccess.from_environ(environ),
            environ.get(ENV_CLUSTER, ""),
            environ.get(ENV_LEDGER_TABLE) or None,
        )

    def ledger(self, op: str) -> str:
        if self.ledger_table is None:
            raise EnvError(f"{ENV_LEDGER_TABLE} is not set: the {op} op needs the ledger")
        return self.ledger_table


env = cached(KubeEnv.from_environ)
