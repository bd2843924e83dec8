"""Custom::HyperPodNodesReady: complete once every instance group of a HyperPod cluster has its nodes Running.

With continuous node provisioning the cluster reports InService while its instances are still being launched
(SageMaker API reference, CreateCluster NodeProvisioningMode: "Your clusters and instance groups remain
InService while scaling"), so the cluster resource no longer says that nodes exist. Whatever needs nodes (the
EKS add-ons whose controllers schedule onto them) waits for this resource instead.

CDK Provider framework: `on_event` records the wanted counts, `is_complete` is polled until it returns
IsComplete true or the provider's total timeout fails the resource. Stdlib and boto3 (the runtime's) only.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

import boto3

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)
RUNBOOK = "docs/runbooks/compute.md, section 'HyperPod nodes did not come up'"
# SageMaker API reference, ClusterInstanceStatus: the one state in which a node serves workloads.
RUNNING = "Running"


def wanted_counts(props: Mapping[str, Any]) -> dict[str, int]:
    """{instance group: node count} from the `InstanceGroups` property, one JSON string (property values are strings)."""
    groups = json.loads(str(props["InstanceGroups"]))
    if not isinstance(groups, dict) or not all(isinstance(v, int) and v >= 0 for v in groups.values()):
        raise ValueError("InstanceGroups must be a JSON object of group name to node count")
    return groups


def node_states(cluster: str, client: Any) -> dict[str, Counter[str]]:
    """{instance group: Counter of InstanceStatus.Status} over every node of `cluster` (name or ARN), all pages."""
    states: dict[str, Counter[str]] = {}
    for page in client.get_paginator("list_cluster_nodes").paginate(ClusterName=cluster):
        for node in page.get("ClusterNodeSummaries", []):
            group = states.setdefault(node["InstanceGroupName"], Counter())
            group[node["InstanceStatus"]["Status"]] += 1
    return states


def on_event(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Nothing to create or delete: the wait happens in is_complete."""
    props = event["ResourceProperties"]
    if event["RequestType"] != "Delete":
        wanted_counts(props)  # refuse a malformed property at once, not after polling
    return {"PhysicalResourceId": f"{props['Cluster']}/nodes-ready"}


def is_complete(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """True once every group has at least its count of Running nodes; the log says what is still missing."""
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = event["ResourceProperties"]
    cluster = str(props["Cluster"])
    wanted = wanted_counts(props)
    states = node_states(cluster, boto3.client("sagemaker"))
    missing = {g: n - states.get(g, Counter())[RUNNING] for g, n in wanted.items()}
    missing = {g: n for g, n in missing.items() if n > 0}
    if missing:
        seen = {g: dict(c) for g, c in states.items()}
        LOG.info("cluster %s: still waiting for %s Running node(s); nodes by state: %s. If this lasts, see %s",
                 cluster, json.dumps(missing), json.dumps(seen), RUNBOOK)  # fmt: skip
        return {"IsComplete": False}
    LOG.info("cluster %s: every instance group has its nodes Running (%s)", cluster, json.dumps(wanted))
    return {"IsComplete": True, "Data": {"Nodes": str(sum(wanted.values()))}}
