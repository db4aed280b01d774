"""One rule's verdict on a job's log lines and on the time that passes between them.

The semantics are HyperPod's (its elastic agent's log evaluator, docs/jobs.md): no first
match within ``expectedStartCutOffInSeconds`` of the start, or a gap between matches longer
than ``expectedRecurringFrequencyInSeconds``, is HANGING; a captured value for which
``value <operator> metricThreshold`` holds on ``metricEvaluationDataPoints`` consecutive
matches is SLOW; a match of a ``faultOnMatch`` rule is FAULTED; a ``stopPattern`` line ends
the rule. Where HyperPod reads a pod's stdout every second, nodemedic sees lines in
deliveries and time in a schedule, so both are functions of explicit state: ``observe`` a
line with its log timestamp, ``expire`` at a time with no line. A gap is measured between
the lines' own timestamps, so a late delivery cannot hide it.
"""

from __future__ import annotations

import math
import operator as op
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Final, Literal, get_args

from nodemedic.jobs.rules import Operator, Rule

Verdict = Literal["hanging", "slow", "faulted"]
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)

COMPARE: Final[dict[Operator, Callable[[float, float], bool]]] = {
    "gt": op.gt,
    "gteq": op.ge,
    "lt": op.lt,
    "lteq": op.le,
    "eq": op.eq,
}


@dataclass(frozen=True)
class RuleState:
    """A rule's memory between deliveries; ``as_item``/``from_item`` keep it in the ledger."""

    started_at: float
    """Epoch seconds the run started (the job's start or its last restart): a line logged
    before belongs to the run before."""
    last_match_at: float | None = None
    slow_count: int = 0
    active: bool = True
    verdict: Verdict | None = None
    verdict_at: float | None = None
    evidence: str = ""
    """The line behind the verdict (empty for a silence)."""
    cut_off_from: float | None = None
    """Epoch seconds the start cut-off counts from where not ``started_at``: after a
    restart, the moment the job's new pods all ran (the Job controller makes them only
    after its failure backoff, up to six minutes), the latest evaluation's time while they
    do not run yet."""

    @property
    def cut_off_start(self) -> float:
        return self.started_at if self.cut_off_from is None else self.cut_off_from

    def as_item(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_item(cls, item: Mapping[str, object]) -> RuleState:
        verdict = item.get("verdict")
        return cls(
            started_at=_float(item["started_at"]),
            last_match_at=_optional_float(item.get("last_match_at")),
            slow_count=int(_float(item.get("slow_count", 0))),
            active=bool(item.get("active", True)),
            verdict=_verdict(verdict),
            verdict_at=_optional_float(item.get("verdict_at")),
            evidence=str(item.get("evidence") or ""),
            cut_off_from=_optional_float(item.get("cut_off_from")),
        )


def _verdict(value: object) -> Verdict | None:
    for verdict in VERDICTS:
        if value == verdict:
            return verdict
    return None


def _float(value: object) -> float:
    return float(str(value))


def _optional_float(value: object) -> float | None:
    return None if value is None else _float(value)


MAX_EVIDENCE_CHARS: Final = 512


def observe(rule: Rule, state: RuleState, line: str, at: float) -> RuleState:
    """The state after the line ``line`` logged at ``at`` (epoch seconds). A rule that has
    a verdict or was stopped keeps it: the verdict stands until the job restarts."""
    return observe_lines(rule, state, ((at, line),))


def observe_lines(rule: Rule, state: RuleState, lines: Iterable[tuple[float, str]]) -> RuleState:
    """The state after ``lines`` (log time, text) in order, each ``observe``d in turn. The
    match time and the count live in locals and a state is built once, at a verdict, a stop
    or the end: a delivery is thousands of lines, and a new state per line was most of the
    job monitor's cost (bench.jobs)."""
    if not state.active or state.verdict is not None:
        return state
    since, last, count = state.cut_off_start, state.last_match_at, state.slow_count
    match, stop = rule.log_pattern.match, rule.stop_pattern
    ending: tuple[Verdict, float, str] | None = None
    for at, line in lines:
        matched = match(line)
        if matched is not None and rule.fault_on_match:
            last, ending = at, ("faulted", at, line)
            break
        if stop is not None and stop.match(line):
            return replace(state, last_match_at=last, slow_count=count, active=False, verdict=None)
        if _silent(rule, since, last, at):
            # A line that does not match is time passing; a match after too long a silence
            # is the end of a hang that the schedule had not yet seen.
            ending = ("hanging", at, "" if matched is None else line)
            break
        if matched is None:
            continue
        last = at
        if not rule.has_metric:
            count = 0
            continue
        count = min(count + 1, rule.data_points) if beyond(rule, matched.group(1)) else 0
        if count >= rule.data_points:
            ending = ("slow", at, line)
            break
    if ending is not None:
        return _judged(state, *ending, last_match_at=last, slow_count=count)
    if (last, count) == (state.last_match_at, state.slow_count):
        return state
    return replace(state, last_match_at=last, slow_count=count)


def expire(rule: Rule, state: RuleState, now: float) -> RuleState:
    """The state at ``now`` when no matching line came: a silence past the start cut-off or
    the recurring frequency is HANGING."""
    if not state.active or state.verdict is not None:
        return state
    if not _silent(rule, state.cut_off_start, state.last_match_at, now):
        return state
    return _judged(
        state, "hanging", now, "", last_match_at=state.last_match_at, slow_count=state.slow_count
    )


def _silent(rule: Rule, cut_off_start: float, last_match_at: float | None, now: float) -> bool:
    """Whether the silence at ``now`` is longer than the rule allows: since the start cut-off
    began until the first match, since the last match after it."""
    if last_match_at is None:
        allowed, since = rule.start_cutoff, cut_off_start
    else:
        allowed, since = rule.recurring_frequency, last_match_at
    return allowed is not None and now - since > allowed


def evidence_time(rule: Rule, state: RuleState) -> float | None:
    """When the verdict's evidence appeared: its line's time, or for a silence the deadline
    it passed (a detection latency counts from there)."""
    if state.verdict_at is None or state.evidence:
        return state.verdict_at
    since = state.cut_off_start if state.last_match_at is None else state.last_match_at
    allowed = rule.start_cutoff if state.last_match_at is None else rule.recurring_frequency
    return since + (allowed or 0.0)


def beyond(rule: Rule, captured: str | None) -> bool:
    """Whether a captured value is a data point beyond the threshold. A value that is no
    finite decimal (``nan``, ``inf``, text) counts as beyond it: a NaN loss is the run gone
    wrong, never a healthy data point."""
    assert rule.metric_threshold is not None and rule.operator is not None
    try:
        value = float(captured or "")
    except ValueError:
        return True
    if not math.isfinite(value):
        return True
    return COMPARE[rule.operator](value, rule.metric_threshold)


def _judged(
    state: RuleState,
    verdict: Verdict,
    at: float,
    line: str,
    *,
    last_match_at: float | None,
    slow_count: int,
) -> RuleState:
    return replace(
        state,
        last_match_at=last_match_at,
        slow_count=slow_count,
        verdict=verdict,
        verdict_at=at,
        evidence=line[:MAX_EVIDENCE_CHARS],
    )
