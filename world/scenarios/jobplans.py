"""The jobs the ``jobs`` scenario (``jobscenario.py``) trains: what each one logs, run by
run, and the HyperPod rules and restart policy it is annotated with; which of them the job
monitor must restart, leave alone or fail; and the pair a node replacement runs under, one
opted in to auto-resume and one not.

The rules' timings are the world's (``Timings.at`` a ``world.pace``): on a busy machine
the simulated training prints less often, and its rules allow for that.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodemedic.contracts.jobs import LOG_MONITORING_ANNOTATION, RUN_POLICY_ANNOTATION
from world.scenarios.training import Plan, healthy_loss, progress, steady

FREQUENCY = 5
"""expectedRecurringFrequencyInSeconds of the progress rules on an idle machine."""
CUT_OFF = 6
"""expectedStartCutOffInSeconds of the start rule on an idle machine. After a restart it
counts from the moment the new pods run, so the Job controller's failure backoff before it
makes them (10 s, then 20, 40...) needs no margin here."""
SPIKE = 3.5
PROGRESS = ".*training_loss_step.*"
LOSS = r".*training_loss_step (\S+).*"


def _rules(*rules: dict[str, Any]) -> str:
    return json.dumps(list(rules))


def _policy(**fields: Any) -> dict[str, str]:
    return {RUN_POLICY_ANNOTATION: json.dumps(fields)}


def _spike(points: int) -> Callable[[int, int], str | None]:
    """``points`` losses of SPIKE from step 10 in the first run, healthy otherwise."""

    def line(run: int, step: int) -> str | None:
        spiking = run == 1 and 10 <= step < 10 + points
        return progress(step, SPIKE if spiking else healthy_loss(step))

    return line


def _stall(run: int, step: int) -> str | None:
    """A data loader that deadlocks at step 12 of the first run."""
    return None if run == 1 and step > 12 else steady(run, step)


def _never_starts(run: int, step: int) -> str | None:
    return None if run == 1 else steady(run, step)


def _evaluates(run: int, step: int) -> str | None:
    """Trains to step 10, then evaluates silently for the rest of the run."""
    if step == 11:
        return "evaluation started"
    return steady(run, step) if step <= 10 else None


def _diverges(run: int, step: int) -> str | None:
    return progress(step, float("nan") if step >= 3 else healthy_loss(step))


@dataclass(frozen=True)
class Timings:
    """The rules' timings in seconds at the world's pace."""

    pace: float
    frequency: int
    cut_off: int

    @classmethod
    def at(cls, pace: float) -> Timings:
        return cls(pace, math.ceil(FREQUENCY * pace), math.ceil(CUT_OFF * pace))


RETRIES = _policy(jobMaxRetryCount=3)
LOSS_RULE = {"name": "LossSpike", "logPattern": LOSS, "metricThreshold": 2.0, "operator": "gt"}


def monitored(timings: Timings) -> tuple[Plan, ...]:
    """The jobs the monitor watches, with their rules' timings at ``timings``."""
    return (
        Plan(
            "stall",
            _stall,
            annotations={
                **RETRIES,
                LOG_MONITORING_ANNOTATION: _rules(
                    {
                        "name": "Progress",
                        "logPattern": PROGRESS,
                        "expectedRecurringFrequencyInSeconds": timings.frequency,
                    }
                ),
            },
        ),
        *(
            Plan(
                f"spike{points}",
                _spike(points),
                annotations={
                    **RETRIES,
                    LOG_MONITORING_ANNOTATION: _rules(
                        {**LOSS_RULE, "metricEvaluationDataPoints": 5}
                    ),
                },
            )
            for points in (5, 4)
        ),
        Plan(
            "nostart",
            _never_starts,
            annotations={
                **RETRIES,
                LOG_MONITORING_ANNOTATION: _rules(
                    {
                        "name": "FirstStep",
                        "logPattern": PROGRESS,
                        "expectedStartCutOffInSeconds": timings.cut_off,
                    }
                ),
            },
        ),
        Plan(
            "evaluate",
            _evaluates,
            annotations={
                **RETRIES,
                LOG_MONITORING_ANNOTATION: _rules(
                    {
                        "name": "Progress",
                        "logPattern": PROGRESS,
                        "expectedRecurringFrequencyInSeconds": timings.frequency,
                        "stopPattern": ".*evaluation started.*",
                    }
                ),
            },
        ),
        Plan(
            "diverge",
            _diverges,
            annotations=_policy(
                jobMaxRetryCount=3,
                restartPolicy={
                    "numRestartBeforeFullJobRestart": 1,
                    "evalPeriodSeconds": 600,
                    "maxFullJobRestarts": 1,
                },
                logMonitoringConfiguration=[LOSS_RULE],
            ),
        ),
    )


RESTARTED = ("stall", "spike5", "nostart")
UNTOUCHED = ("spike4", "evaluate")
# A HyperPod manifest's annotations, unchanged.
RESUMED = Plan(
    "resume",
    workers=2,
    annotations={
        "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
        "sagemaker.amazonaws.com/job-max-retry-count": "3",
    },
)
LEFT_ALONE = Plan("plain", workers=2)
