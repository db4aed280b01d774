"""The guard on the local world's changes to moto (``world.aws.motopatch``): each one
is written against one moto release and the signatures it gives the replaced attributes,
so a newer moto must fail here, naming the target, before it fails somewhere in the demo."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import re
import threading
import tomllib
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.support.paths import ROOT
from tests.support.tables import create_pk_table
from world.aws import (
    cloudwatch,
    groups,
    hyperpod,
    instances,
    motopatch,
    motoserver,
    motoservices,
    quotas,
    stepfunctions,
    transactions,
)
from world.aws.motopatch import MOTO_VERSION, PARSE_DEFINITION, REBOOT_INSTANCES, TARGETS
from world.aws.stack import QUICK_EC2

INSTALLED = importlib.metadata.version("moto")
REREAD = (
    "re-read its replacement (world/aws/motopatch.py says where it lives) against "
    f"moto {INSTALLED}, then update the target"
)


def test_the_installed_moto_is_the_release_the_patches_are_written_against() -> None:
    assert INSTALLED == MOTO_VERSION, (
        f"moto {INSTALLED} is installed; world/motopatch.py is written against "
        f"moto {MOTO_VERSION}: run this module's tests, re-read the replacement of every "
        "target they name, then move MOTO_VERSION and the pin in pyproject.toml together"
    )


def test_pyproject_pins_the_release_the_patches_are_written_against() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [r for r in project["optional-dependencies"]["local"] if re.match(r"moto\b", r)]
    assert [re.sub(r"^moto(\[.*\])?", "", p) for p in pins] == [f"=={MOTO_VERSION}"], (
        f"pyproject.toml pins {pins}; world/motopatch.py is written against moto {MOTO_VERSION}"
    )


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_moto_still_has_each_target_as_its_replacement_expects(
    target: motopatch.Target,
) -> None:
    problem = motopatch.changed(target)
    assert problem is None, f"moto {INSTALLED}: {problem}; {REREAD}"


@pytest.mark.parametrize(
    ("target", "reported"),
    [
        (
            dataclasses.replace(REBOOT_INSTANCES, signature="(self, instance_ids, dry_run)"),
            "moto.ec2.models.instances.InstanceBackend.reboot_instances is now "
            "(self, instance_ids); its replacement is written for (self, instance_ids, dry_run)",
        ),
        (
            dataclasses.replace(REBOOT_INSTANCES, name="reboot_all"),
            "moto.ec2.models.instances.InstanceBackend.reboot_all is gone "
            "(not defined on InstanceBackend itself)",
        ),
        (
            dataclasses.replace(REBOOT_INSTANCES, owner="moto.ec2.models.vms.InstanceBackend"),
            "moto.ec2.models.vms.InstanceBackend is gone (No module named 'moto.ec2.models.vms')",
        ),
        (
            dataclasses.replace(PARSE_DEFINITION, static=False),
            "moto.stepfunctions.parser.asl.parse.asl_parser.AmazonStateLanguageParser.parse "
            "is now a staticmethod",
        ),
    ],
    ids=["signature", "attribute", "module", "staticmethod"],
)
def test_a_change_in_moto_is_reported_with_the_target_and_what_changed(
    target: motopatch.Target, reported: str
) -> None:
    """The stand-in targets expect what moto does not have, as an old expectation would
    after moto changed."""
    assert motopatch.changed(target) == reported


def _every_patch() -> list[contextlib.AbstractContextManager[None]]:
    def nothing(*args: object) -> None:
        pass

    return [
        motopatch.machine_calls(rebooted=nothing, terminated=nothing, health_set=nothing),
        motopatch.lambda_invocations(lambda function, event: ("{}", False, "")),
        motopatch.definition_parsing(lambda parse, definition: parse(definition)),
        motopatch.atomic_writes(),
        stepfunctions.final_stops(),
        stepfunctions.runtime_causes(),
        stepfunctions.start_executions(),
        motoservices.commands_run(lambda instance, command: {}),
        motoservices.lambda_targets(),
        hyperpod.hyperpod_calls(),
        instances.chosen_instance_ids(),
        instances.distinct_private_ips(),
        groups.instances_left_out(),
        cloudwatch.metrics_from_logs(),
        cloudwatch.percentile_statistics(),
        cloudwatch.metrics_listed_once(),
        motoserver.backends_remembered(),
        transactions.item_rollbacks(),
        stepfunctions.paths_parsed_once(),
        stepfunctions.clients_made_once(),
        quotas.aws_limits(quotas.AwsLimits()),
    ]


def test_every_target_is_replaced_while_patched_and_moto_s_own_again_after() -> None:
    own = {target: target.current() for target in TARGETS}
    with contextlib.ExitStack() as stack:
        for patch in _every_patch():
            stack.enter_context(patch)
        assert [t for t in TARGETS if t.current() is own[t]] == []
    assert [t for t in TARGETS if t.current() is not own[t]] == []


def test_a_second_owner_of_a_target_is_refused() -> None:
    own = REBOOT_INSTANCES.current()
    with motopatch.machine_calls(rebooted=print, terminated=print, health_set=print):
        replaced = REBOOT_INSTANCES.current()
        with (
            pytest.raises(RuntimeError, match=r"InstanceBackend\.reboot_instances.* replaced"),
            motopatch.machine_calls(rebooted=print, terminated=print, health_set=print),
        ):
            pass
        assert REBOOT_INSTANCES.current() is replaced
    assert REBOOT_INSTANCES.current() is own


def _execution(*, stopped: bool) -> Any:
    """moto's evaluation environment of a running execution, ``stopped`` or not."""
    from moto.stepfunctions.parser.asl.eval.environment import Environment

    states: Any = importlib.import_module("moto.stepfunctions.parser.asl.eval.program_state")
    env: Any = object.__new__(Environment)
    env._state_mutex = threading.RLock()
    env._frames = []
    env.program_state_event = threading.Event()
    env._program_state = states.ProgramRunning()
    if stopped:
        env.set_stop(stop_date=datetime.now(UTC), cause=None, error=None)
    return env


def test_a_stopped_execution_stays_stopped_when_its_last_task_then_fails() -> None:
    """The race moto has: a task still running when the execution is stopped fails
    afterwards; the execution must end ABORTED, not FAILED."""
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramError, ProgramStopped

    failed = {"error": "States.TaskFailed", "cause": "the task was cut short"}
    with stepfunctions.final_stops():
        stopped = _execution(stopped=True)
        stopped.set_error(failed)
        stopped.set_timed_out()
        assert isinstance(stopped.program_state(), ProgramStopped)
        running = _execution(stopped=False)
        running.set_error(failed)
        assert isinstance(running.program_state(), ProgramError)
    unpatched = _execution(stopped=True)
    unpatched.set_error(failed)
    assert isinstance(unpatched.program_state(), ProgramError), "moto keeps a stop: drop the patch"


def test_a_task_s_unexpected_exception_is_named_in_its_cause_and_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """moto would report ``'region'`` alone: which exception, and where, is lost."""
    env: Any = SimpleNamespace(
        next_state_name="Renew lease", event_history_context=SimpleNamespace(source_event_id=7)
    )
    state = SimpleNamespace(name="Renew lease")
    places: dict[str, str] = {}
    try:
        places["region"]
    except KeyError as exc:
        raised = exc
    with stepfunctions.runtime_causes():
        event = motopatch.FROM_ERROR.current()(state, env, raised)
    details = event.event_details["taskFailedEventDetails"]
    assert (details["error"], details["cause"]) == ("States.Runtime", "KeyError: 'region'")
    (record,) = [r for r in caplog.records if r.name == stepfunctions.__name__]
    assert "Renew lease" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is raised


def test_put_events_invokes_the_function_a_matching_rule_targets_and_no_other() -> None:
    """The planned repairs' path: a notice put on the bus reaches the rule's function."""
    import io
    import json
    import zipfile

    import boto3
    from moto import mock_aws

    invoked: list[tuple[str, Any]] = []

    def invoke(function: Any, event: Any) -> tuple[str, bool, str]:
        invoked.append((function.function_name, event))
        return "{}", False, ""

    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context): return event")
    with (
        mock_aws(),
        motopatch.lambda_invocations(invoke),
        motoservices.lambda_targets(),
    ):
        role = boto3.client("iam", region_name="us-east-1").create_role(
            RoleName="r", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
        )["Role"]["Arn"]
        function = boto3.client("lambda", region_name="us-east-1").create_function(
            FunctionName="planned",
            Runtime="python3.11",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": code.getvalue()},
        )["FunctionArn"]
        events = boto3.client("events", region_name="us-east-1")
        events.put_rule(Name="notices", EventPattern=json.dumps({"source": ["aws.health"]}))
        events.put_targets(Rule="notices", Targets=[{"Id": "planned", "Arn": function}])
        events.put_rule(Name="every-minute", ScheduleExpression="rate(1 minute)")
        events.put_targets(Rule="every-minute", Targets=[{"Id": "tick", "Arn": function}])
        for source in ("aws.health", "aws.ec2"):
            events.put_events(
                Entries=[{"Source": source, "DetailType": "AWS Health Event", "Detail": "{}"}]
            )

    ((name, event),) = invoked
    assert (name, event["source"], event["detail-type"]) == (
        "planned",
        "aws.health",
        "AWS Health Event",
    )


def test_a_command_runs_on_the_instances_it_names_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own ``send_command`` runs a command without ``Targets`` on every instance of
    the region; SSM runs it on its ``InstanceIds``."""
    for name, value in QUICK_EC2.items():
        monkeypatch.setenv(name, value)
    ran: list[str] = []

    def run(instance_id: str, command: Any) -> dict[str, Any]:
        ran.append(instance_id)
        return {}

    with mock_aws(), motoservices.commands_run(run):
        ec2 = boto3.client("ec2", region_name="us-east-1")
        started = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=3, MaxCount=3)
        named, *_ = (i["InstanceId"] for i in started["Instances"])
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.create_document(
            Name="probe",
            DocumentType="Command",
            Content=json.dumps(
                {
                    "schemaVersion": "2.2",
                    "mainSteps": [
                        {
                            "action": "aws:runShellScript",
                            "name": "probe",
                            "inputs": {"runCommand": ["true"]},
                        }
                    ],
                }
            ),
        )
        sent = ssm.send_command(DocumentName="probe", InstanceIds=[named])["Command"]

    assert ran == [named]
    assert sent["InstanceIds"] == [named]


def test_a_read_waits_while_a_transaction_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's ``GetItem`` of a key the table lacks adds an entry to the table's dict, and
    ``TransactWriteItems`` deep-copies the table before it writes: a read inside that copy
    failed the transaction (``dictionary changed size during iteration``), as the
    reconcile's lease renewal did beside its reads of other nodes' locks."""
    import copy

    from moto.dynamodb.models.table import Table

    readers: list[threading.Thread] = []
    failures: list[BaseException] = []
    ended_inside: list[bool] = []
    """Whether the read had ended while the transaction still copied: judged there, since
    once the transaction is over the read may end at any time (on a busy machine, before
    the test looks)."""

    def copy_table(what: Any, memo: Any = None) -> Any:
        """The transaction's copy of the table, with a read of a missing key let in."""
        if isinstance(what, Table):
            reader = threading.Thread(target=read_missing)
            readers.append(reader)
            reader.start()
            reader.join(timeout=0.5)
            ended_inside.append(not reader.is_alive())
        return copy.deepcopy(what, memo)

    def read_missing() -> None:
        """A failed read also ends its thread early: kept, so it is not taken for one that
        ran inside the transaction."""
        try:
            client.get_item(TableName="ledger", Key={"pk": {"S": "i-0b"}})
        except Exception as exc:
            failures.append(exc)

    with mock_aws(), motopatch.atomic_writes():
        # Made here: boto3 makes clients one thread at a time, not while another does.
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_pk_table(client, "ledger")
        monkeypatch.setattr("moto.dynamodb.models.copy", SimpleNamespace(deepcopy=copy_table))
        client.transact_write_items(
            TransactItems=[{"Put": {"TableName": "ledger", "Item": {"pk": {"S": "i-0a"}}}}]
        )
        (reader,) = readers
        (read_inside,) = ended_inside
        reader.join()
        assert _get("i-0a") == {"pk": {"S": "i-0a"}}

    assert not failures, f"the read failed: {failures!r}"
    assert not read_inside, "the read ran inside the transaction"


def _get(pk: str) -> dict[str, Any] | None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    item: dict[str, Any] | None = dynamodb.get_item(TableName="ledger", Key={"pk": {"S": pk}}).get(
        "Item"
    )
    return item
