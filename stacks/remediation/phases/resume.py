"""Auto-resume of training jobs (docs/jobs.md): before the drain, the opted-in jobs with pods
on the node are found and recorded; once the node is repaired (rebooted and back, or
replaced), each is restarted whole or failed past its retries, and a failure or a job that
could not be resumed is mailed. Best effort by design: neither step may fail or strand the
node's remediation, so their errors are caught, recorded and told, never routed to the
failure phase."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import dynamo_json, formatted, text_at
from stacks.remediation.kit.signals import notify


def find_jobs(flow: Flow, then: sfn.IChainable) -> sfn.IChainable:
    """``$.jobs``: the opted-in jobs on the node, recorded on the decision; then ``then``."""
    found = flow.kube(
        "Find jobs to resume",
        "jobs_on_node",
        {"node": text_at(state.NODE_NAME), "devices": sfn.JsonPath.list_at(state.DRAIN_DEVICES)},
        result_path=state.JOBS,
        guard=False,
    )
    record = flow.record("Record jobs", values={"jobs": dynamo_json(state.JOBS)})
    found.add_catch(record, result_path=state.JOBS)
    record.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    found.next(record).next(then)
    return found


def resume_jobs(flow: Flow, then: sfn.IChainable) -> sfn.IChainable:
    """The jobs ``find_jobs`` found restarted or failed, recorded, told when one failed or
    could not be resumed; then ``then``. Nothing to do without jobs (or before any drain)."""
    s = flow.scope
    resumed = flow.kube(
        "Resume jobs",
        "resume_jobs",
        {
            "jobs": sfn.JsonPath.list_at(f"{state.JOBS}.jobs"),
            "node": text_at(state.NODE_NAME),
            "decision_id": text_at(state.decision("decision_id")),
        },
        result_path=state.RESUMED,
        guard=False,
    )
    record = flow.record("Record resumed jobs", values={"resumed": dynamo_json(state.RESUMED)})
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
    resumed.add_catch(record, result_path=state.RESUMED)
    record.add_catch(tell, result_path=sfn.JsonPath.DISCARD)
    told.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    resumed.next(record).next(tell)
    told.next(then)
    return (
        sfn.Choice(s, "Jobs to resume?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.is_present(state.JOBS_COUNT),
                sfn.Condition.number_greater_than(state.JOBS_COUNT, 0),
            ),
            resumed,
        )
        .otherwise(then)
    )
