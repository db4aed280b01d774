"""The job monitor on one core: training-log lines a second through the Lambda's record
parsing (``nodemedic.jobs.records.pod_line``), the search for Neuron hardware errors
(``nodemedic.jobs.hardware.strongest``) and the rules' evaluation
(``nodemedic.jobs.monitor.judge_lines``), next to a plain ``re.match`` loop over the same
lines' text measured in the same run; and how late the time-driven rules fire.

The lines are Container Insights records (tests/events/containerinsights) of the demo's
simulated training (``world.scenarios.training``), spread over jobs, judged by the jobs
scenario's rules (a progress rule with a recurring frequency, a loss-spike rule with a
metric). The lateness is reasoned from the schedule, not timed on AWS: silences ending at
random instants, and a schedule firing every ``stacks.jobs.SCHEDULE``, judged by
nodemedic's own ``judge_time``; the Lambda's own run time comes on top.

    python -m bench.jobs [--lines N] [--jobs J]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

from bench.timing import best_rate
from nodemedic.jobs.hardware import strongest
from nodemedic.jobs.monitor import current, judge_lines, judge_time, verdict_of
from nodemedic.jobs.records import lines_by_pod
from nodemedic.jobs.rules import parse_rules
from stacks.jobs import SCHEDULE
from world.scenarios.training import healthy_loss, progress

RECORD = Path(__file__).parents[1] / "tests/events/containerinsights/application-record.json"
FREQUENCY = 30.0
RULES = parse_rules(
    json.dumps(
        [
            {
                "name": "Progress",
                "logPattern": ".*training_loss_step.*",
                "expectedRecurringFrequencyInSeconds": FREQUENCY,
            },
            {
                "name": "LossSpike",
                "logPattern": r".*training_loss_step (\S+).*",
                "metricThreshold": 2.0,
                "operator": "gt",
                "metricEvaluationDataPoints": 5,
            },
        ]
    )
)


def corpus(lines: int, jobs: int, seed: int = 7) -> list[tuple[float, str]]:
    """(log time, record) of ``jobs`` jobs' ranks, one step line each, every tenth line a
    framework line that matches no rule."""
    template = json.loads(RECORD.read_text())
    rng = random.Random(seed)
    out = []
    for index in range(lines):
        job = f"job-{index % jobs}"
        step = index // jobs
        text = (
            "NCCL INFO comm 0x55d1 rank 3 nranks 16 - Init COMPLETE"
            if index % 10 == 9
            else progress(step, healthy_loss(step) * rng.uniform(0.9, 1.1))
        )
        record = {**template, "log": text + "\n"}
        record["kubernetes"] = {
            **template["kubernetes"],
            "labels": {"job-name": job, "batch.kubernetes.io/job-name": job},
            "pod_name": f"{job}-{rng.randint(0, 15)}",
        }
        out.append((1_000_000.0 + index * 0.001, json.dumps(record)))
    return out


def monitored(records: Sequence[tuple[float, str]]) -> int:
    """What the Lambda does with a delivery's records but the API reads: lines grouped by
    pod (one job's here), each group searched for Neuron hardware errors and its rules
    judged over its lines; returns the verdicts and findings (none is expected)."""
    verdicts = 0
    for lines in lines_by_pod(records).values():
        states = judge_lines(RULES, current(RULES, {}, 0.0), lines)
        verdicts += verdict_of(states) is not None
        verdicts += strongest(lines) is not None
    return verdicts


def baseline(texts: Sequence[str]) -> int:
    pattern = re.compile(r".*training_loss_step (\S+).*")
    return sum(1 for text in texts if pattern.match(text))


def lateness(trials: int, seed: int = 11) -> list[float]:
    """Seconds from a silence's deadline to the schedule run that finds the job hanging."""
    period = SCHEDULE.to_seconds()
    rng = random.Random(seed)
    found = []
    for _ in range(trials):
        last = rng.uniform(0, 10 * period)
        states = judge_lines(RULES[:1], current(RULES[:1], {}, 0.0), [(last, progress(1, 1.0))])
        deadline = last + FREQUENCY
        firing = period * (deadline // period)
        while verdict_of(states) is None:
            firing += period
            states = judge_time(RULES[:1], states, firing)
        found.append(firing - deadline)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--jobs", type=int, default=16)
    args = parser.parse_args()
    records = corpus(args.lines, args.jobs)
    texts = [json.loads(message)["log"] for _, message in records]
    if monitored(records):
        raise SystemExit("a healthy corpus got a verdict")
    ours = best_rate(lambda: monitored(records), len(records))
    plain = best_rate(lambda: baseline(texts), len(texts))
    late = sorted(lateness(10_000))
    print(f"corpus: {len(records)} Container Insights records, {args.jobs} jobs, 2 rules")
    print(f"plain re.match loop (text only):      {plain:>10,.0f} lines/s")
    print(f"job monitor (parse + search + judge):  {ours:>10,.0f} lines/s (target >= 100,000)")
    print(f"ratio to the plain loop:              {ours / plain:>10.2f}x")
    print(
        f"time-driven rules, schedule every {SCHEDULE.to_seconds()} s (reasoned, 10,000 "
        f"silences): late by median {late[len(late) // 2]:.1f} s, max {late[-1]:.1f} s "
        "(target <= 60 s), plus the Lambda's run"
    )


if __name__ == "__main__":
    main()
