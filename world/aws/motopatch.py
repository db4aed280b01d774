"""Every change the local world makes to moto, in one place, written against one moto release
(``MOTO_VERSION``).

moto is the local world's AWS, but a few of its calls stop short of what nodemedic relies on
AWS to do. While the world runs, these moto attributes are replaced, and put back on the way
out; what the replacements do lives with the behaviour they stand for:

==========================================  ================================================
``InstanceBackend.reboot_instances``        the machine reboots too (``hypervisor.py``)
``InstanceBackend.terminate_instances``     the machine powers off too (``hypervisor.py``)
``AutoScalingBackend.set_instance_health``  an ``Unhealthy`` instance is replaced
                                            (``hypervisor.py``)
``LambdaFunction._invoke_lambda``           the handler runs here or in a worker, not in
                                            Docker (``inprocess.py``, ``lambdaworkers.py``)
``AmazonStateLanguageParser.parse``         a definition is parsed once, not at every
                                            execution (``stepfunctions.py``)
``DynamoHandler.call_action``               one DynamoDB request at a time: a write is
                                            atomic, as DynamoDB's are, and no read runs
                                            inside one (``atomic_writes``, here)
``Environment.set_error`` and              a stopped execution stays ABORTED, as AWS's
``set_timed_out``                           does (``stepfunctions.final_stops``)
``ExecutionState._from_error``              a task's unexpected exception is logged with
                                            its traceback, and named in the error's cause
                                            (``stepfunctions.runtime_causes``)
``SimpleSystemManagerBackend.send_command``  the named nodes run the command, as SSM's do
                                            (``gpus.py``, ``motoservices.py``; moto's own
                                            sends one with no ``Targets`` to every instance)
``StateTaskServiceSfn``                     the native ``states:startExecution`` task
``._normalise_parameters``                  starts an execution (``stepfunctions.py``)
``Rule.send_to_targets``                    an EventBridge rule invokes its Lambda
                                            targets (``motoservices.py``)
``moto.ec2.models.instances``               an instance gets the id a Karpenter Node's
``.random_instance_id``                     provider ID names, and an address no other
``.random_private_ip``                      has, as its Node's name (``instances.py``)
``SageMakerModelBackend``                   HyperPod's ``ResourceNotFound`` and
``.describe_cluster_node`` and              ``NodeRecovery``; the batch reboot and
``.describe_cluster``                       replace calls moto lacks (``hyperpod.py``)
``LogsBackend.put_log_events``              EMF lines become metrics (``cloudwatch.py``)
``Statistics.get_statistics_for_type``,     percentile statistics (``p90``, ``p99.9``) in
``CloudWatchBackend.get_metric_data``,      GetMetricData and GetMetricStatistics
``CloudWatchResponse.get_metric_statistics``  (``cloudwatch.py``)
``CloudWatchBackend.get_filtered_metrics``  ListMetrics lists a metric once (``cloudwatch.py``)
``json_path.parse``, ``boto_client.boto3``  a JSONPath parsed, a task's client made once
                                            (``stepfunctions.py``)
``DynamoDBBackend.transact_write_items``    it saves and restores the items it names, not
                                            a copy of each table (``transactions.py``)
``DomainDispatcherApplication``             a host's backend is found once, not at every
``.get_backend_for_host``                   request under one lock (``motoserver.py``)
``StepFunctionResponse.start_execution``    past Step Functions' token bucket, a start
                                            is throttled (``quotas.py``)
``LambdaBackend.send_log_event``            a failed subscription delivery is retried,
                                            then dead-lettered, as Lambda does (``quotas.py``)
==========================================  ================================================

Each ``Target`` carries the signature moto ``MOTO_VERSION`` gives it. ``changed`` says what
a newer moto changed about one; ``tests/unit/world/test_motopatch.py`` fails naming it, and
when the installed moto is not ``MOTO_VERSION``: re-read each named replacement before
moving the pin. One owner replaces a target at a time: a second world in a process is an error.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

MOTO_VERSION = "5.2.5"
"""The moto release every replacement here is written against (pinned in pyproject.toml)."""

Invoke = Callable[[Any, Any], tuple[str, bool, str]]
"""``invoke(function, event) -> (body, is_error, logs)``, as moto's ``_invoke_lambda``."""
Parse = Callable[[str], tuple[Any, Any]]
"""``parse(definition) -> (program, syntax tree)``, as moto's ASL parser."""
InstancesHook = Callable[[list[str]], None]
CommandHook = Callable[[str, Any], dict[str, Any] | None]
"""``run(instance_id, command)`` (moto's ``Command``): the invocation's fields once it ended;
None where SSM never knows the invocation."""
HealthHook = Callable[[Any, str, str], None]
"""``health_set(autoscaling_backend, instance_id, health_status)``."""


@dataclass(frozen=True)
class Target:
    """A moto attribute the local world replaces: the class defining it, by dotted path
    (looked up when needed, so that a moved module is reported, not an import error), its
    name, and the signature its replacement is written for."""

    owner: str
    name: str
    signature: str
    """Its parameters without annotations, as ``inspect.signature`` prints them."""
    static: bool = False
    """moto defines it as a ``staticmethod``."""

    def __str__(self) -> str:
        return f"{self.owner}.{self.name}"

    def cls(self) -> type[Any]:
        module, _, name = self.owner.rpartition(".")
        try:
            found: type[Any] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise LookupError(f"{self.owner} is gone ({exc})") from exc
        return found

    def current(self) -> Any:
        """What the class defines under the name now (moto's, unless replaced)."""
        owner = self.cls()
        if self.name not in vars(owner):
            raise LookupError(f"{self} is gone (not defined on {owner.__name__} itself)")
        return vars(owner)[self.name]


REBOOT_INSTANCES = Target(
    "moto.ec2.models.instances.InstanceBackend", "reboot_instances", "(self, instance_ids)"
)
TERMINATE_INSTANCES = Target(
    "moto.ec2.models.instances.InstanceBackend", "terminate_instances", "(self, instance_ids)"
)
SET_INSTANCE_HEALTH = Target(
    "moto.autoscaling.models.AutoScalingBackend",
    "set_instance_health",
    "(self, instance_id, health_status)",
)
INVOKE_LAMBDA = Target(
    "moto.awslambda.models.LambdaFunction", "_invoke_lambda", "(self, event=None)"
)
PARSE_DEFINITION = Target(
    "moto.stepfunctions.parser.asl.parse.asl_parser.AmazonStateLanguageParser",
    "parse",
    "(definition)",
    static=True,
)
DYNAMODB_REQUEST = Target("moto.dynamodb.responses.DynamoHandler", "call_action", "(self)")
_ENVIRONMENT = "moto.stepfunctions.parser.asl.eval.environment.Environment"
EXECUTION_ENDINGS = (
    Target(_ENVIRONMENT, "set_error", "(self, error)"),
    Target(_ENVIRONMENT, "set_timed_out", "(self)"),
)
FROM_ERROR = Target(
    "moto.stepfunctions.parser.asl.component.state.exec.execute_state.ExecutionState",
    "_from_error",
    "(self, env, ex)",
)
SFN_PARAMETERS = Target(
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service."
    "state_task_service_sfn.StateTaskServiceSfn",
    "_normalise_parameters",
    "(self, parameters, boto_service_name=None, service_action_name=None)",
)
SEND_COMMAND = Target(
    "moto.ssm.models.SimpleSystemManagerBackend",
    "send_command",
    "(self, comment, document_name, timeout_seconds, instance_ids, max_concurrency, "
    "max_errors, notification_config, output_s3_bucket_name, output_s3_key_prefix, "
    "output_s3_region, parameters, service_role_arn, targets)",
)
SEND_TO_TARGETS = Target(
    "moto.events.models.Rule", "send_to_targets", "(self, original_event, transform_input=True)"
)
_SAGEMAKER = "moto.sagemaker.models.SageMakerModelBackend"
DESCRIBE_CLUSTER_NODE = Target(_SAGEMAKER, "describe_cluster_node", "(self, cluster_name, node_id)")
DESCRIBE_CLUSTER = Target(_SAGEMAKER, "describe_cluster", "(self, cluster_name)")
_INSTANCES = "moto.ec2.models.instances"
"""A module: ``owner`` of its functions."""
RANDOM_INSTANCE_ID = Target(_INSTANCES, "random_instance_id", "()")
RANDOM_PRIVATE_IP = Target(_INSTANCES, "random_private_ip", "(cidr=None, ipv6=False)")
PUT_LOG_EVENTS = Target(
    "moto.logs.models.LogsBackend",
    "put_log_events",
    "(self, log_group_name, log_stream_name, log_events)",
)
STATISTIC = Target("moto.cloudwatch.models.Statistics", "get_statistics_for_type", "(self, stat)")
_CLOUDWATCH = "moto.cloudwatch.models.CloudWatchBackend"
GET_METRIC_DATA = Target(
    _CLOUDWATCH,
    "get_metric_data",
    "(self, queries, start_time, end_time, scan_by='TimestampAscending')",
)
GET_METRIC_STATISTICS = Target(
    "moto.cloudwatch.responses.CloudWatchResponse", "get_metric_statistics", "(self)"
)
FILTERED_METRICS = Target(
    _CLOUDWATCH, "get_filtered_metrics", "(self, metric_name, namespace, dimensions)"
)
JSONPATH_PARSE = Target(
    "moto.stepfunctions.parser.asl.utils.json_path", "parse", "(path, debug=None)"
)
TRANSACT_WRITE_ITEMS = Target(
    "moto.dynamodb.models.DynamoDBBackend", "transact_write_items", "(self, transact_items)"
)
START_EXECUTION = Target(
    "moto.stepfunctions.responses.StepFunctionResponse", "start_execution", "(self)"
)
SEND_LOG_EVENT = Target(
    "moto.awslambda.models.LambdaBackend",
    "send_log_event",
    "(self, function_arn, filter_name, log_group_name, log_stream_name, log_events)",
)
DESCRIBE_GROUPS = Target(
    "moto.autoscaling.responses.AutoScalingResponse", "describe_auto_scaling_groups", "(self)"
)
_DISPATCHER = "moto.moto_server.werkzeug_app.DomainDispatcherApplication"
BACKEND_FOR_HOST = Target(_DISPATCHER, "get_backend_for_host", "(self, host)")
TARGETS = (
    REBOOT_INSTANCES,
    SEND_COMMAND,
    TERMINATE_INSTANCES,
    SET_INSTANCE_HEALTH,
    INVOKE_LAMBDA,
    PARSE_DEFINITION,
    DYNAMODB_REQUEST,
    *EXECUTION_ENDINGS,
    FROM_ERROR,
    SFN_PARAMETERS,
    SEND_TO_TARGETS,
    DESCRIBE_CLUSTER_NODE,
    DESCRIBE_CLUSTER,
    RANDOM_INSTANCE_ID,
    RANDOM_PRIVATE_IP,
    PUT_LOG_EVENTS,
    STATISTIC,
    GET_METRIC_DATA,
    GET_METRIC_STATISTICS,
    FILTERED_METRICS,
    BACKEND_FOR_HOST,
    TRANSACT_WRITE_ITEMS,
    JSONPATH_PARSE,
    START_EXECUTION,
    SEND_LOG_EVENT,
    DESCRIBE_GROUPS,
)
_replacing: set[Target] = set()
_dynamodb_lock = threading.RLock()


def changed(target: Target) -> str | None:
    """What the installed moto changed about ``target`` since ``MOTO_VERSION``, or None."""
    try:
        found = target.current()
    except LookupError as exc:
        return str(exc)
    if isinstance(found, staticmethod) != target.static:
        return f"{target} {'is no longer' if target.static else 'is now'} a staticmethod"
    function = found.__func__ if target.static else found
    now = _signature(function)
    if now != target.signature:
        return f"{target} is now {now}; its replacement is written for {target.signature}"
    return None


def _signature(function: Callable[..., Any]) -> str:
    """The parameters, without annotations: what callers pass and a replacement accepts."""
    parameters = inspect.signature(function).parameters.values()
    return str(inspect.Signature([p.replace(annotation=p.empty) for p in parameters]))


@contextlib.contextmanager
def replaced(replacements: Mapping[Target, Any]) -> Iterator[None]:
    """Set each target to its replacement; put moto's back on the way out."""
    busy = sorted(str(t) for t in replacements if t in _replacing)
    if busy:
        raise RuntimeError(f"moto's {', '.join(busy)} is replaced already (one world at a time)")
    originals = {target: target.current() for target in replacements}
    for target, replacement in replacements.items():
        setattr(target.cls(), target.name, replacement)
        _replacing.add(target)
    try:
        yield
    finally:
        for target, original in originals.items():
            setattr(target.cls(), target.name, original)
            _replacing.discard(target)


@contextlib.contextmanager
def machine_calls(
    *, rebooted: InstancesHook, terminated: InstancesHook, health_set: HealthHook
) -> Iterator[None]:
    """While active, EC2 ``RebootInstances`` and ``TerminateInstances`` and Auto Scaling
    ``SetInstanceHealth`` do what moto does, then tell the hooks; a call moto rejects tells
    them nothing."""
    reboot = REBOOT_INSTANCES.current()
    terminate = TERMINATE_INSTANCES.current()
    set_health = SET_INSTANCE_HEALTH.current()

    def reboot_instances(self: Any, instance_ids: list[str]) -> Any:
        result = reboot(self, instance_ids)
        rebooted(list(instance_ids))
        return result

    def terminate_instances(self: Any, instance_ids: list[str]) -> Any:
        result = terminate(self, instance_ids)
        terminated(list(instance_ids))
        return result

    def set_instance_health(self: Any, instance_id: str, health_status: str) -> None:
        set_health(self, instance_id, health_status)
        health_set(self, instance_id, health_status)

    with replaced(
        {
            REBOOT_INSTANCES: reboot_instances,
            TERMINATE_INSTANCES: terminate_instances,
            SET_INSTANCE_HEALTH: set_instance_health,
        }
    ):
        yield


@contextlib.contextmanager
def lambda_invocations(invoke: Invoke) -> Iterator[None]:
    """While active, every moto Lambda invocation is ``invoke(function, event)`` instead of a
    Docker container."""

    def invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        body, is_error, logs = invoke(self, event)
        # As moto's own implementation does: the invocation's output lands in the function's
        # log group, where a person looking at the local world expects it.
        self.logs_backend.ensure_log_group(self.logs_group_name)
        self.save_logs(logs + body)
        return body, is_error, logs

    with replaced({INVOKE_LAMBDA: invoke_lambda}):
        yield


@contextlib.contextmanager
def definition_parsing(parse: Callable[[Parse, str], tuple[Any, Any]]) -> Iterator[None]:
    """While active, moto's Step Functions parse a definition with ``parse(moto_parse,
    definition)``, where ``moto_parse`` is moto's own parser."""
    moto_parse: Parse = PARSE_DEFINITION.current().__func__

    def parse_definition(definition: str) -> tuple[Any, Any]:
        return parse(moto_parse, definition)

    with replaced({PARSE_DEFINITION: staticmethod(parse_definition)}):
        yield


@contextlib.contextmanager
def atomic_writes() -> Iterator[None]:
    """Make moto's DynamoDB writes atomic, as DynamoDB's are: one request at a time.

    moto checks a ``ConditionExpression`` and then writes, without a lock; executions run
    in threads, so two conditional writes (two admissions to the breaker, two node locks)
    could both pass their condition. Nor are its reads apart from its writes: a
    ``GetItem`` of a key the table lacks adds an empty entry to the table's dict (a
    ``defaultdict``), and a ``TransactWriteItems`` deep-copies the table first (to roll it
    back); the one inside the other failed the transaction with ``RuntimeError:
    dictionary changed size during iteration`` (the reconcile's lease renewal, beside the
    reads of the nodes with no lock). The breaker and the lock depend on DynamoDB's
    guarantee, so the local world restores it by serializing the requests.
    """
    handle = DYNAMODB_REQUEST.current()

    def call_action(self: Any) -> Any:
        with _dynamodb_lock:
            return handle(self)

    with replaced({DYNAMODB_REQUEST: call_action}):
        yield
