"""The job breakers' arithmetic: a wave of verdicts in one namespace holds that namespace's
restarts only, the cluster's cap holds the namespaces that restarted in the window but never
a namespace's first restart, a silent log group holds everyone's, one page per trip, and a
breaker closes again once it cooled down with room."""

from __future__ import annotations

import pytest

from nodemedic.jobs.breaker import Breakers, BreakerState, JobLimits, Judgement, judge

LIMITS = JobLimits(
    restarts_per_window=2, cluster_restarts_per_window=4, window=600, cooldown=1800, silence=300
)


def verdicts(
    state: Breakers, decisions: list[tuple[str, str]], now: float = 0.0
) -> tuple[list[Judgement], Breakers]:
    """Each (namespace, decision) judged in turn, one second apart, from ``now``."""
    judged = []
    for i, (namespace, decision) in enumerate(decisions):
        one = judge(
            state,
            namespace=namespace,
            decision=decision,
            now=now + i,
            limits=LIMITS,
            heard_at=now + i,
            by_schedule=False,
        )
        judged.append(one)
        state = one.state
    return judged, state


def test_a_wave_in_one_namespace_trips_its_breaker_once_and_holds_no_other() -> None:
    judged, state = verdicts(Breakers(), [("a", "a0"), ("a", "a1"), ("a", "a2"), ("a", "a3")])
    assert [j.verdict for j in judged] == ["admit", "admit", "trip", "hold"]
    assert [j.page for j in judged] == [False, False, True, False]
    assert judged[2].scope == "namespace a"
    other, _ = verdicts(state, [("b", "b0"), ("b", "b1")], now=10.0)
    assert [j.verdict for j in other] == ["admit", "admit"]
    # A redelivered admitted decision is counted once; while tripped it is held.
    [again], _ = verdicts(state, [("a", "a0")], now=20.0)
    assert again.verdict == "hold"
    [cooled], closed = verdicts(state, [("a", "a9")], now=3.0 + 1801)
    assert cooled.verdict == "admit" and closed.namespaces["a"].tripped_at is None


def test_the_cluster_cap_holds_the_namespaces_that_restarted_but_no_first_restart() -> None:
    wave = [("a", "a0"), ("b", "b0"), ("a", "a1"), ("b", "b1"), ("a", "a2")]
    judged, state = verdicts(Breakers(), wave)
    assert [j.verdict for j in judged] == ["admit", "admit", "admit", "admit", "trip"]
    assert (judged[-1].scope, judged[-1].page) == ("cluster", True)
    held, state = verdicts(state, [("b", "b2"), ("f", "f0"), ("f", "f1")], now=10.0)
    assert [(j.verdict, j.scope, j.page) for j in held] == [
        ("hold", "cluster", False),
        ("admit", "cluster", False),
        ("hold", "cluster", False),
    ]


def test_a_tenants_namespaces_cannot_hold_another_teams_restart() -> None:
    """Four namespaces of one tenant, each within its own limit, fill the cluster's cap:
    the cap's trip (one page) holds their next restarts, never another team's first."""
    tenant = [(f"t{n}", f"t{n}-{i}") for i in range(2) for n in range(4)]
    judged, state = verdicts(Breakers(), tenant)
    assert [j.verdict for j in judged[:4]] == ["admit"] * 4, "each namespace's first"
    assert [j.verdict for j in judged[4:]] == ["trip", "hold", "hold", "hold"]
    [other], state = verdicts(state, [("ml-team", "alice-llama")], now=20.0)
    assert other.verdict == "admit"
    # A wave of first restarts is admitted and still trips the cap, paging once.
    firsts, _ = verdicts(Breakers(), [(n, f"{n}0") for n in "abcdef"])
    assert [j.verdict for j in firsts] == ["admit"] * 6
    assert [j.page for j in firsts] == [False] * 4 + [True, False]


def test_a_silent_group_trips_the_clusters_breaker_on_the_schedules_verdicts_only() -> None:
    quiet = {"namespace": "a", "now": 1000.0, "limits": LIMITS, "heard_at": 600.0}
    tripped = judge(Breakers(), decision="a", by_schedule=True, **quiet)  # type: ignore[arg-type]
    assert (tripped.verdict, tripped.scope) == ("trip", "cluster")
    # A silent pipe holds every namespace, its first restart too.
    fresh = {**quiet, "namespace": "b", "now": 1001.0}
    held = judge(tripped.state, decision="b", by_schedule=False, **fresh)  # type: ignore[arg-type]
    assert (held.verdict, held.scope) == ("hold", "cluster")
    assert judge(Breakers(), decision="a", by_schedule=False, **quiet).verdict == "admit"  # type: ignore[arg-type]
    never = judge(
        Breakers(),
        namespace="a",
        decision="a",
        now=1000.0,
        limits=LIMITS,
        heard_at=None,
        by_schedule=True,
    )
    assert never.verdict == "admit", "before any line there is no pipe to lose"


def test_a_breaker_item_written_before_namespaces_is_the_clusters() -> None:
    old = {"started": {"x": 5.0}, "tripped_at": 1.0, "cooled_until": 9.0, "reason": "r"}
    read = Breakers.from_item(old)
    assert read.cluster == BreakerState({"x": 5.0}, 1.0, 9.0, "r", everyone=True)
    assert read.namespaces == {}
    assert Breakers.from_item(read.as_item()) == read


def test_monitor_only_holds_without_tripping() -> None:
    held = judge(
        Breakers(),
        namespace="a",
        decision="a",
        now=0.0,
        limits=JobLimits(monitor_only=True),
        heard_at=0.0,
        by_schedule=False,
    )
    assert (held.verdict, held.page, held.state) == ("hold", False, Breakers())


@pytest.mark.parametrize(
    "raw",
    [
        {"restarts_per_window": 0},
        {"cluster_restarts_per_window": 0},
        {"window": "600"},
        {"monitor_only": "false"},
        {"windows": 600},
    ],
)
def test_bad_limits_are_a_clear_error(raw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="job breaker"):
        JobLimits.from_mapping(raw)
