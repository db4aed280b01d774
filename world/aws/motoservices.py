"""moto's EventBridge and SSM as the stack needs them: a rule invokes the functions it
targets (the planned repairs' rules target one), and a node runs the command SSM sends it
(the GPU reset). Their targets, with the signatures the replacements are written for, are
``motopatch``'s."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from typing import Any

from world.aws.motopatch import SEND_COMMAND, SEND_TO_TARGETS, CommandHook, replaced


@contextlib.contextmanager
def lambda_targets() -> Iterator[None]:
    """Let an EventBridge rule invoke the functions it targets.

    moto's ``PutEvents`` matches an event against each rule's pattern and sends it to the
    targets moto knows (log groups, queues, buses), but raises ``NotImplementedError`` for a
    function: the rules of the planned repairs target one. moto also matches every event
    to a schedule's rule, which has no pattern (and state machines as targets); on AWS a
    schedule's rule matches no event. The replacement passes schedules over, invokes each
    function target of a matching rule with the event (or the target's constant ``Input``),
    as EventBridge does, asynchronously on AWS and here before ``PutEvents`` answers, and
    hands the other targets to moto's own code.
    """
    from moto.awslambda.models import lambda_backends
    from moto.utilities.arns import parse_arn

    original = SEND_TO_TARGETS.current()

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        if self.scheduled_expression:
            return
        functions = [t for t in self.targets if parse_arn(t["Arn"]).service == "lambda"]
        if functions and self.event_pattern.matches_event(original_event):
            backend = lambda_backends[self.account_id][self.region_name]
            for target in functions:
                body = target.get("Input") or json.dumps(original_event)
                backend.get_function(target["Arn"]).invoke(
                    body, {"x-amz-invocation-type": "Event"}, {}
                )
        others = [t for t in self.targets if t not in functions]
        if others:
            rest = copy.copy(self)
            rest.targets = others
            original(rest, original_event, transform_input)

    with replaced({SEND_TO_TARGETS: send_to_targets}):
        yield


@contextlib.contextmanager
def commands_run(run: CommandHook) -> Iterator[None]:
    """While active, SSM ``SendCommand`` has each instance it names run the command (moto
    answers ``Success``, no output); ``GetCommandInvocation`` reads what the node made of
    it, and knows no invocation ``run`` answered None for. The state machine's SSM tasks
    fail with the error names AWS gives them (``Ssm.<Error>Exception``): moto spells the
    service as it is called (``ssm.``) for all but two services."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_aws_sdk as sdk,
    )

    send = SEND_COMMAND.current()

    def send_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        # moto's Command extends the list it is given with every instance its Targets match,
        # and no Targets matches every instance of the region.
        named = list(kwargs["instance_ids"])
        command = send(self, *args, **kwargs)
        if not command.targets:
            command.instance_ids = named
            command.target_count = command.completed_count = len(named)
            command.invocations = [i for i in command.invocations if i["InstanceId"] in named]
        answered = []
        for ran in command.invocations:
            fields = run(ran["InstanceId"], command)
            if fields is not None:
                answered.append({**ran, **fields})
        command.invocations = answered
        return command

    sdk._SERVICE_ERROR_NAMES["ssm"] = "Ssm"
    try:
        with replaced({SEND_COMMAND: send_command}):
            yield
    finally:
        sdk._SERVICE_ERROR_NAMES.pop("ssm", None)
