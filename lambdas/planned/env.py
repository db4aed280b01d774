"""The planned function's environment (``lambdas.environment``): the planned state machine
it starts, and the cluster settings that say which instances a notice may act on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.environment import EnvError, cached, required
from nodemedic.contracts.env import ENV_LEDGER_TABLE, ENV_PLANNED, ENV_STATE_MACHINE_ARN


@dataclass(frozen=True)
class PlannedEnv:
    state_machine_arn: str
    """The planned state machine: it waits until a decision's ``act_at``, then remediates."""
    cluster: str
    node_groups: tuple[str, ...]
    spot_groups: tuple[str, ...]
    lead_time: int
    ledger_table: str
    """Where each decision is recorded before it starts (``nodemedic.remediate.recorded``)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> PlannedEnv:
        arn, text = required(environ, ENV_STATE_MACHINE_ARN), required(environ, ENV_PLANNED)
        ledger = required(environ, ENV_LEDGER_TABLE)
        try:
            raw = json.loads(text)
            return cls(
                state_machine_arn=arn,
                cluster=str(raw["cluster"]),
                node_groups=tuple(str(g) for g in raw["node_groups"]),
                spot_groups=tuple(str(g) for g in raw["spot_groups"]),
                lead_time=int(raw["lead_time"]),
                ledger_table=ledger,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvError(f"{ENV_PLANNED} is not the planned settings: {exc!r}") from exc


planned_env = cached(PlannedEnv.from_environ)
