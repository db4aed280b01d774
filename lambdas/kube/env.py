"""The kube function's environment (``lambdas.environment``): which cluster it talks to,
and the ledger the ``silent`` op reads the agents' heartbeats from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.environment import EnvError, cached
from lambdas.kube.client import ClusterAccess
from nodemedic.contracts.env import ENV_LEDGER_TABLE


@dataclass(frozen=True)
class KubeEnv:
    access: ClusterAccess
    ledger_table: str | None
    """None: only the ``silent`` op needs it (``heartbeat_table``), and the stack always sets
    it; the tests of the other ops need not."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> KubeEnv:
        return cls(ClusterAccess.from_environ(environ), environ.get(ENV_LEDGER_TABLE) or None)

    def heartbeat_table(self) -> str:
        if self.ledger_table is None:
            raise EnvError(f"{ENV_LEDGER_TABLE} is not set: the silent op reads heartbeats there")
        return self.ledger_table


env = cached(KubeEnv.from_environ)
