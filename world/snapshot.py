"""The state of the local world after a scenario, read from its APIs: the cluster's nodes
and training pods, the node group's instances (or, where the machines are a HyperPod
cluster's nodes, the cluster's: then ``node_group`` is null and ``hyperpod_cluster`` says
them), the instances of Karpenter's NodeClaims where it launched any
(``karpenter_nodepool``), the metrics and the notifications."""

from __future__ import annotations

import datetime
from typing import Any

from kubernetes import client

from nodemedic.contracts.metrics import METRICS_NAMESPACE
from world.kube.watch import node_seen
from world.kube.workload import WORKER_LABEL
from world.world import NODE_GROUP, World

NAMESPACES = (METRICS_NAMESPACE, "NeuronHealthCheck")


def snapshot(world: World) -> dict[str, Any]:
    """Plain data with stable keys (the demo's ``--json``)."""
    return {"cluster": _cluster(world), "aws": _aws(world)}


def _cluster(world: World) -> dict[str, Any]:
    core = client.CoreV1Api(world.api)
    workers = world.job.nodes_running_workers()
    nodes = []
    for node in sorted(core.list_node().items, key=lambda n: n.metadata.name):
        seen = node_seen("LISTED", node)
        nodes.append(
            {
                "name": seen.name,
                "instance_id": seen.instance_id,
                "ready": seen.ready,
                "unschedulable": seen.unschedulable,
                "health": seen.health,
                "taints": list(seen.taints),
                "conditions": {
                    c.type: c.status for c in node.status.conditions or [] if c.type != "Ready"
                },
                "boot_id": seen.boot_id,
                "worker": workers.get(seen.name),
            }
        )
    pods = [
        {
            "name": pod.metadata.name,
            "worker": int(pod.metadata.labels[WORKER_LABEL]),
            "node": pod.spec.node_name,
            "phase": pod.status.phase if pod.status else None,
        }
        for pod in sorted(world.job.pods(), key=lambda p: p.metadata.labels[WORKER_LABEL])
    ]
    return {"nodes": nodes, "pods": pods}


def _aws(world: World) -> dict[str, Any]:
    owner = _hyperpod_cluster(world, world.hyperpod) if world.hyperpod else _node_group(world)
    # Instances that left it (terminated) are still in EC2 for a while.
    members = {i["instance_id"] for i in owner["instances"]}
    states = sorted(
        (
            {"instance_id": i["InstanceId"], "state": i["State"]["Name"]}
            for r in world.aws("ec2").describe_instances()["Reservations"]
            for i in r["Instances"]
            if i["InstanceId"] not in members and i["InstanceId"] in world.machines
        ),
        key=lambda i: i["instance_id"],
    )
    # Karpenter's instances were never the group's: they are its NodePool's.
    owner["left"] = [i for i in states if i["instance_id"] not in world.karpenter]
    notifications = [
        {
            "subject": n.subject,
            "instance_id": n.instance_id,
            "outcome": n.outcome,
            "summary": n.body.get("summary"),
            "sent_at": round(n.sent_at, 3),
        }
        for n in world.inbox.messages()
    ]
    found = {
        "node_group": None if world.hyperpod else owner,
        "metrics": _metrics(world),
        "notifications": notifications,
    }
    if world.hyperpod:
        found["hyperpod_cluster"] = owner
    if world.karpenter:
        pool = [{**i, "node": world.machines[i["instance_id"]].node} for i in states]
        found["karpenter_nodepool"] = [i for i in pool if i["instance_id"] in world.karpenter]
    return found


def _node_group(world: World) -> dict[str, Any]:
    (group,) = world.aws("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[NODE_GROUP]
    )["AutoScalingGroups"]
    instances = [
        {
            "instance_id": i["InstanceId"],
            "lifecycle": i["LifecycleState"],
            "health": i["HealthStatus"],
            "zone": i["AvailabilityZone"],
        }
        for i in sorted(group["Instances"], key=lambda i: i["InstanceId"])
    ]
    return {"name": NODE_GROUP, "desired": group["DesiredCapacity"], "instances": instances}


def _hyperpod_cluster(world: World, name: str) -> dict[str, Any]:
    """The HyperPod cluster whose nodes the machines are (the world has no node group)."""
    pages = world.aws("sagemaker").get_paginator("list_cluster_nodes").paginate(ClusterName=name)
    instances = [
        {
            "instance_id": node["InstanceId"],
            "instance_group": node["InstanceGroupName"],
            "status": node.get("InstanceStatus", {}).get("Status"),
        }
        for page in pages
        for node in sorted(page["ClusterNodeSummaries"], key=lambda n: n["InstanceId"])
    ]
    return {"name": name, "instances": instances}


def _metrics(world: World) -> list[dict[str, Any]]:
    cloudwatch = world.aws("cloudwatch")
    now = datetime.datetime.now(datetime.UTC)
    found = []
    for namespace in NAMESPACES:
        listed = {
            (
                m["MetricName"],
                tuple(sorted((d["Name"], d["Value"]) for d in m.get("Dimensions", []))),
            )
            for m in cloudwatch.list_metrics(Namespace=namespace)["Metrics"]
        }
        for name, dimensions in sorted(listed):
            metric = {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions],
            }
            stats = cloudwatch.get_metric_statistics(
                Namespace=namespace,
                MetricName=metric["MetricName"],
                Dimensions=metric.get("Dimensions", []),
                StartTime=now - datetime.timedelta(hours=1),
                EndTime=now + datetime.timedelta(minutes=1),
                Period=3600,
                Statistics=["Sum", "SampleCount"],
            )["Datapoints"]
            found.append(
                {
                    "namespace": namespace,
                    "name": metric["MetricName"],
                    "dimensions": {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])},
                    "sum": sum(p["Sum"] for p in stats),
                    "samples": int(sum(p["SampleCount"] for p in stats)),
                }
            )
    return sorted(found, key=lambda m: (m["namespace"], m["name"], sorted(m["dimensions"].items())))


def render(state: dict[str, Any], *, since: float) -> list[str]:
    """The snapshot as text; notification times relative to ``since``."""
    nodes = state["cluster"]["nodes"]
    width = max([len("NODE"), *(len(n["name"]) for n in nodes)])
    lines = ["", "Cluster: nodes"]
    lines.append(
        f"  {'NODE':<{width}} {'INSTANCE':<20} {'READY':<5} {'SCHED':<5} {'HEALTH':<32} "
        f"{'BOOT':<8} {'WORKER':<6} TAINTS"
    )
    for n in nodes:
        lines.append(
            f"  {n['name']:<{width}} {n['instance_id']:<20} {_yes(n['ready']):<5} "
            f"{_yes(not n['unschedulable']):<5} {n['health'] or '-':<32} {n['boot_id'][:8]:<8} "
            f"{'-' if n['worker'] is None else n['worker']:<6} {', '.join(n['taints']) or '-'}"
        )
    lines.append("Cluster: training pods")
    for p in state["cluster"]["pods"]:
        lines.append(
            f"  worker {p['worker']}  {p['name']:<36} {p['phase'] or '-':<9} {p['node'] or '-'}"
        )
    lines += _owner_lines(state["aws"])
    lines.append("AWS: CloudWatch metrics (sum over the run)")
    for m in state["aws"]["metrics"]:
        dims = ",".join(f"{k}={v}" for k, v in sorted(m["dimensions"].items()))
        lines.append(f"  {m['namespace']}/{m['name']}{f' [{dims}]' if dims else ''}: {m['sum']:g}")
    lines.append(f"AWS: SNS notifications ({len(state['aws']['notifications'])})")
    for n in state["aws"]["notifications"]:
        lines.append(f"  +{n['sent_at'] - since:6.2f}s  {n['subject']}")
        if n["summary"]:
            lines.append(f"            {n['summary']}")
    return lines


def _owner_lines(aws: dict[str, Any]) -> list[str]:
    """The Auto Scaling group's instances, or the HyperPod cluster's nodes, and those gone;
    then Karpenter's instances, where it launched any."""
    group = aws["node_group"]
    if group is not None:
        lines = [f"AWS: Auto Scaling group {group['name']} (desired {group['desired']})"]
        lines += [
            f"  {i['instance_id']:<20} {i['lifecycle']:<12} {i['health']:<10} {i['zone']}"
            for i in group["instances"]
        ]
        left = "left the group"
    else:
        group = aws["hyperpod_cluster"]
        lines = [f"AWS: SageMaker HyperPod cluster {group['name']}"]
        lines += [
            f"  {i['instance_id']:<20} {i['instance_group']:<12} {i['status']}"
            for i in group["instances"]
        ]
        left = "left the cluster"
    lines += [f"  {i['instance_id']:<20} {left}: {i['state']}" for i in group["left"]]
    if aws.get("karpenter_nodepool"):
        lines.append("AWS: the instances of Karpenter's NodeClaims")
        lines += [
            f"  {i['instance_id']:<20} {i['state']:<12} {i['node']}"
            for i in aws["karpenter_nodepool"]
        ]
    return lines


def _yes(value: bool) -> str:
    return "yes" if value else "no"
