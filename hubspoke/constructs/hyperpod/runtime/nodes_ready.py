"""Custom::HyperPodNodesReady: complete once every instance group's nodes are launched, or Running, or (a
Checking wait) Running or still in deep health checks at the end of its budget, as `Until` says.

With continuous provisioning the cluster is InService while nodes still launch (SageMaker API reference,
CreateCluster NodeProvisioningMode: "Your clusters and instance groups remain InService while scaling"), so
node-bound work waits for these, chained because deep health checks outlast one custom resource's hour
(docs/decisions.md, "Node waits"). CDK Provider framework: `on_event` records the wanted counts, `is_complete`
is polled until done or the total timeout. Stdlib and boto3 (the runtime's) only.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

import boto3

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)
RUNBOOK = "docs/runbooks/compute.md, section 'HyperPod nodes did not come up'"
# SageMaker API reference, ClusterInstanceStatus; Running alone serves workloads. ASSUMED (the reference gives
# no order): Pending, then DeepHealthCheckInProgress, then Running; SystemUpdating is a launched node
# updating.
UNTIL: Mapping[str, frozenset[str]] = {
    "Launched": frozenset({"DeepHealthCheckInProgress", "Running", "SystemUpdating"}),
    "Checking": frozenset({"Running"}),
    "Running": frozenset({"Running"}),
}
# At a Checking budget's end, nodes still in deep health checks ("about 2 hours": SageMaker developer guide,
# "Recommended resiliency configuration") or through them pass; any other state fails the wait, naming nodes.
PROGRESSING: Mapping[str, frozenset[str]] = {"Checking": frozenset({"DeepHealthCheckInProgress", "Running"})}
# The framework sleeps this long between polls (hubspoke/constructs/hyperpod/nodes_ready.py POLL, checked
# against the template by tests/constructs/hyperpod/test_nodes_ready_lambda.py).
POLL_SECONDS = 60.0
# The request ends this much before its WaitSeconds budget: room for the framework to report the failure.
REPORT_RESERVE_SECONDS = 60.0
# The physical ID of the Running resource stays what it was before the other ones existed; Checking ones add
# their Step.
PHYSICAL_SUFFIX = {"Launched": "nodes-launched", "Checking": "nodes-checking", "Running": "nodes-ready"}


def wanted_counts(props: Mapping[str, Any]) -> dict[str, int]:
    """{instance group: node count} from the `InstanceGroups` property, one JSON string (property values are strings)."""
    groups = json.loads(str(props["InstanceGroups"]))
    if not isinstance(groups, dict) or not all(isinstance(v, int) and v >= 0 for v in groups.values()):
        raise ValueError("InstanceGroups must be a JSON object of group name to node count")
    return groups


def until(props: Mapping[str, Any]) -> str:
    """The phase this resource waits for: `Launched`, `Checking` or `Running`."""
    phase = str(props.get("Until", ""))
    if phase not in UNTIL:
        raise ValueError(f"Until must be one of {sorted(UNTIL)}, got {phase!r}")
    return phase


def list_nodes(cluster: str, client: Any) -> list[tuple[str, str, str]]:
    """(instance group, InstanceId, InstanceStatus.Status) of every node of `cluster` (name or ARN), all pages."""
    return [
        (node["InstanceGroupName"], node["InstanceId"], node["InstanceStatus"]["Status"])
        for page in client.get_paginator("list_cluster_nodes").paginate(ClusterName=cluster)
        for node in page.get("ClusterNodeSummaries", [])
    ]


def node_states(nodes: list[tuple[str, str, str]]) -> dict[str, Counter[str]]:
    """{instance group: Counter of node states}."""
    states: dict[str, Counter[str]] = {}
    for group, _, status in nodes:
        states.setdefault(group, Counter())[status] += 1
    return states


def missing(
    wanted: Mapping[str, int], states: Mapping[str, Counter[str]], accepted: frozenset[str]
) -> dict[str, int]:
    """{group: how many more nodes it needs in the `accepted` states}, for the groups short of their count."""
    reached = {g: sum(n for s, n in states.get(g, Counter()).items() if s in accepted) for g in wanted}
    return {g: n - reached[g] for g, n in wanted.items() if n > reached[g]}


def outside(
    nodes: list[tuple[str, str, str]], wanted: Mapping[str, int], accepted: frozenset[str]
) -> list[str]:
    """ "<InstanceId> (<state>)" of each node of a wanted group in none of the `accepted` states."""
    return [f"{i} ({s})" for g, i, s in nodes if g in wanted and s not in accepted]


def on_event(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Nothing to create or delete: the wait happens in is_complete."""
    props = event["ResourceProperties"]
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    wanted_counts(props)  # refuse a malformed property at once, not after polling
    # StartedAt reaches every is_complete call: the CDK provider framework merges onEvent's answer into the
    # isComplete event (as the CNQ provisioner's handler relies on too).
    step = f"-{props['Step']}" if props.get("Step") else ""
    return {
        "PhysicalResourceId": f"{props['Cluster']}/{PHYSICAL_SUFFIX[until(props)]}{step}",
        "StartedAt": str(time.time()),
    }


def budget_left(event: Mapping[str, Any], run_seconds: float) -> float:
    """Seconds of the request's WaitSeconds budget that would be left after the next poll.

    Counted from onEvent (StartedAt) plus POLL_SECONDS and one more invocation (`run_seconds`); when the next
    poll could end past the budget less the reserve, this poll is the last, so CloudFormation shows our
    failure naming the missing nodes, never its ServiceTimeout (hubspoke/policy/waiters.py).
    """
    budget = float(event["ResourceProperties"]["WaitSeconds"]) - REPORT_RESERVE_SECONDS
    started = float(event.get("StartedAt") or time.time())
    return budget - (time.time() - started) - POLL_SECONDS - run_seconds


def is_complete(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """True once every group has at least its count of nodes in the phase's states, or (a Checking wait) in a
    progressing state when its budget is spent; the log and any failure say what is missing, naming the nodes."""
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    run_seconds = context.get_remaining_time_in_millis() / 1000.0 if context is not None else 0.0
    props = event["ResourceProperties"]
    cluster, phase, wanted = str(props["Cluster"]), until(props), wanted_counts(props)
    nodes = list_nodes(cluster, boto3.client("sagemaker"))
    states = node_states(nodes)
    short = missing(wanted, states, UNTIL[phase])
    if not short:
        LOG.info("cluster %s: every instance group has its nodes %s (%s)", cluster, phase, json.dumps(wanted))
        return {"IsComplete": True, "Data": {"Nodes": str(sum(wanted.values()))}}
    seen = {g: dict(c) for g, c in states.items()}
    LOG.info("cluster %s: still waiting for %s node(s) %s; nodes by state: %s. If this lasts, see %s",
             cluster, json.dumps(short), phase, json.dumps(seen), RUNBOOK)  # fmt: skip
    if not (props.get("WaitSeconds") and budget_left(event, run_seconds) < 0):
        return {"IsComplete": False}
    accepted = PROGRESSING.get(phase)
    if accepted is not None and not missing(wanted, states, accepted):
        # The budget is spent but every node is still in its checks (or through them): the next wait goes on.
        LOG.info("cluster %s: nodes still in their deep health checks, the next wait takes over: %s",
                 cluster, json.dumps(seen))  # fmt: skip
        return {"IsComplete": True, "Data": {"Nodes": str(sum(wanted.values()))}}
    named = outside(nodes, wanted, accepted or UNTIL[phase])
    raise TimeoutError(
        f"cluster {cluster}: after {props['WaitSeconds']} s, still waiting for {json.dumps(short)} "
        f"node(s) {phase}; nodes by state: {json.dumps(seen)}; nodes not "
        f"{'progressing' if accepted else phase}: {', '.join(named) or 'none listed yet'}. See {RUNBOOK}"
    )
