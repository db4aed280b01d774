"""Auto-resume of training jobs (docs/jobs.md): before the drain, the opted-in jobs with pods
on the node are found and recorded; once the node is repaired (rebooted and back, or
replaced), each is restarted whole or failed past its retries, and a failure or a job that
could not be resumed is mailed (a decision deferred to HyperPod's own recovery finds its
jobs and waits for that repair in ``deferred``). Best effort by design: neither step may
fail or strand the node's remediation, so their errors are caught, recorded and told, never
routed to the failure phase."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import dynamo_json, formatted, text_at
from stacks.remediation.kit.signals import notify


def jobs_found() -> sfn.Condition:
    """``find_jobs`` found opted-in jobs on the node (it did not fail)."""
    return sfn.Condition.and_(
        sfn.Condition.is_present(state.JOBS_COUNT),
        sfn.Condition.number_greater_than(state.JOBS_COUNT, 0),
    )


def find_jobs(flow: Flow, then: sfn.IChainable, suffix: str = "") -> sfn.IChainable:
    """``$.jobs``: the opted-in jobs on the node, recorded on the decision; then ``then``.
    ``suffix`` tells its states apart where the flow finds jobs in more than one place."""
    found = flow.kube(
        f"Find jobs to resume{suffix}",
        "jobs_on_node",
        {"node": text_at(state.NODE_NAME), "devices": sfn.JsonPath.list_at(state.DRAIN_DEVICES)},
        result_path=state.JOBS,
        guard=False,
    )
    record = flow.record(f"Record jobs{suffix}", values={"jobs": dynamo_json(state.JOBS)})
    found.add_catch(record, result_path=state.JOBS)
    record.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    found.next(record).next(then)
    return found


def resume_jobs(flow: Flow, then: sfn.IChainable, *, deferred: bool = False) -> sfn.IChainable:
    """The jobs ``find_jobs`` found restarted or failed, recorded, told when one failed or
    could not be resumed; then ``then``. Nothing to do without jobs (or before any drain).
    ``deferred``: a decision deferred to HyperPod (``phases.deferred``) resumes them under
    its repair's key once HyperPod repaired the node, and not at all while it did not."""
    s = flow.scope
    record = flow.record("Record resumed jobs", values={"resumed": dynamo_json(state.RESUMED)})

    def resume(id: str, key: str) -> sfn.IChainable:
        """The kube op, once per ``key`` (``decision_id``, the jobs' ``job-resumed-by``)."""
        resumed = flow.kube(
            id,
            "resume_jobs",
            {
                "jobs": sfn.JsonPath.list_at(f"{state.JOBS}.jobs"),
                "node": text_at(state.NODE_NAME),
                "decision_id": text_at(key),
            },
            result_path=state.RESUMED,
            guard=False,
        )
        resumed.add_catch(record, result_path=state.RESUMED)
        resumed.next(record)
        return resumed

    told = notify(
        flow,
        "Notify jobs",
        formatted("nodemedic jobs after {}: {}", state.OUTCOME_NAME, state.INSTANCE_ID),
        {"jobs": sfn.JsonPath.object_at(state.RESUMED)},
        guard=False,
    )
    tell = (
        sfn.Choice(s, "Tell about jobs?")
        .when(
            sfn.Condition.or_(
                sfn.Condition.is_present(state.RESUMED_ERROR),
                sfn.Condition.and_(
                    sfn.Condition.is_present(state.RESUMED_TELL),
                    sfn.Condition.boolean_equals(state.RESUMED_TELL, True),
                ),
            ),
            told,
        )
        .otherwise(then)
    )
    record.add_catch(tell, result_path=sfn.JsonPath.DISCARD)
    told.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    record.next(tell)
    told.next(then)
    choice = sfn.Choice(s, "Jobs to resume?")
    if deferred:
        choice.when(
            sfn.Condition.is_present(state.DEFERRED_KEY),
            resume("Resume jobs after HyperPod's repair", state.DEFERRED_KEY),
        ).when(sfn.Condition.is_present(state.DEFERRED), then)
    return choice.when(
        jobs_found(),
        resume("Resume jobs", state.decision("decision_id")),
    ).otherwise(then)
