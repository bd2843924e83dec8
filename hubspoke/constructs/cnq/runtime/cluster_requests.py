"""Custom::CnqCluster, Custom::CnqPersistentStorage and Custom::CnqFloatingIps requests: their properties, the
once-per-request checks (on_event) and one bounded convergence step (is_complete); provisioner.py dispatches."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from . import capacity, cluster, exports, floating, network, nodes
from .contract import clamp_sent_tag
from .props import DEFAULT_REST_PORT, aws, read_secret, require, strings
from .session import Deadline, ProvisioningError, login

log = logging.getLogger(__name__)


def cluster_spec(props: Mapping[str, Any]) -> cluster.ClusterSpec:
    """Custom::CnqCluster's properties: the nodes, floating IPs, buckets and capacity the cluster forms with."""
    require(props, "ClusterName", "NodeIps", "NodeInstanceIds", "ObjectStorageUris", "AdminSecretArn",
             "QumuloCoreVersion", "FloatingNetmask")  # fmt: skip
    return cluster.ClusterSpec(
        cluster_name=str(props["ClusterName"]),
        node_ips=strings(props, "NodeIps"),
        node_instance_ids=strings(props, "NodeInstanceIds"),
        floating_ips=strings(props, "FloatingIps"),
        floating_netmask=str(props["FloatingNetmask"]),
        object_storage_uris=strings(props, "ObjectStorageUris"),
        usable_capacity_bytes=int(props["UsableCapacityBytes"]),
        product_type=product_type(props),
        version=str(props["QumuloCoreVersion"]),
        rest_port=int(props.get("RestPort") or DEFAULT_REST_PORT),
    )


def storage_spec(props: Mapping[str, Any]) -> cluster.ClusterSpec:
    """Custom::CnqPersistentStorage's properties: the nodes to reach, the buckets and the capacity limit."""
    require(props, "ClusterName", "NodeIps", "NodeInstanceIds", "ObjectStorageUris", "AdminSecretArn",
             "UsableCapacityBytes")  # fmt: skip
    return cluster.ClusterSpec(
        cluster_name=str(props["ClusterName"]), node_ips=strings(props, "NodeIps"),
        node_instance_ids=strings(props, "NodeInstanceIds"), floating_ips=(), floating_netmask="",
        object_storage_uris=strings(props, "ObjectStorageUris"),
        usable_capacity_bytes=int(props["UsableCapacityBytes"]), product_type=product_type(props),
        version=str(props.get("QumuloCoreVersion") or ""), rest_port=int(props.get("RestPort") or DEFAULT_REST_PORT),
    )  # fmt: skip


# What releases before storage.product_type formed every cluster as (their resource had no ProductType).
FORMED_BEFORE_PRODUCT_TYPE = "ACTIVE_WITH_STANDARD_STORAGE"


def product_type(props: Mapping[str, Any]) -> str:
    return str(props.get("ProductType") or FORMED_BEFORE_PRODUCT_TYPE)


def _refuse_product_type_change(
    old: Mapping[str, Any], new: Mapping[str, Any], *, rolling_back: bool
) -> None:
    """The product type is set when the cluster forms and cannot change ("immutable after creation",
    qumulo-terraform-aws @ 8a6e4d57, variables.tf cluster_product_type; the SDK has no call that changes it:
    qumulo-api 7.10.2.1 passes product_type only to create_object_backed_cluster)."""
    before, after = product_type(old), product_type(new)
    if before != after and not rolling_back:
        raise ProvisioningError(
            f"storage.product_type {before} -> {after}: Qumulo fixes the product type when the cluster forms; "
            f"set storage.product_type back to {before} (a new type needs a new cluster)"
        )


def cluster_event(
    request: str, props: Mapping[str, Any], old: Mapping[str, Any], deadline: Deadline, stack_id: str
) -> dict[str, str]:
    """Checks once per request, before anything in the stack is touched."""
    spec = cluster_spec(props)  # a malformed request fails here, before anything waits
    if request == "Create" and nodes.stack_status(aws("cloudformation"), stack_id) == "CREATE_IN_PROGRESS":
        # The stack's first create: until Custom::CnqNodeProtection keeps them, the node volumes go with their
        # instances if the create rolls back (the launch template keeps DeleteOnTermination false: a changed
        # template is a new version on every running node, which CloudFormation replaces).
        nodes.set_delete_on_termination(aws("ec2"), spec.node_instance_ids, True)
    if request != "Update":
        return {}
    rolling_back = nodes.stack_status(aws("cloudformation"), stack_id) == nodes.ROLLING_BACK
    capacity.refuse_shrinking(dict(old), dict(props), rolling_back=rolling_back)
    _refuse_product_type_change(old, props, rolling_back=rolling_back)
    return {}


def storage_event(
    request: str, props: Mapping[str, Any], old: Mapping[str, Any], deadline: Deadline, stack_id: str
) -> dict[str, str]:
    """The clamp as it was, for a request that raises the limit (an Update above the old value, or the step's
    Create, which a stack formed before this step existed gets with a raise in the same deploy)."""
    spec = storage_spec(props)
    if request == "Create" and nodes.stack_status(aws("cloudformation"), stack_id) == "CREATE_IN_PROGRESS":
        return {}  # the stack's first create: the cluster formed with this very limit (Custom::CnqCluster)
    if request == "Update":
        rolling_back = nodes.stack_status(aws("cloudformation"), stack_id) == nodes.ROLLING_BACK
        capacity.refuse_shrinking(dict(old), dict(props), rolling_back=rolling_back)
        if int(old.get("UsableCapacityBytes") or 0) >= spec.usable_capacity_bytes:
            return {}
    client, _ = login(spec.node_ips, spec.rest_port, read_secret(str(props["AdminSecretArn"])), deadline,
                      what=f"cluster {spec.cluster_name}")  # fmt: skip
    return {"ClampBefore": str(capacity.current_clamp(client))}


def floating_ips(request: str, props: Mapping[str, Any], old: Mapping[str, Any], stack_id: str) -> str:
    """The cluster's floating IPs, joined: assigned to new interfaces, never reconciled per interface."""
    require(props, "ClusterName", "NetworkInterfaceIds", "Counts")
    rolling_back = (
        request == "Update" and nodes.stack_status(aws("cloudformation"), stack_id) == nodes.ROLLING_BACK
    )
    addresses = floating.converge(
        aws("ec2"), strings(props, "NetworkInterfaceIds"), [int(c) for c in strings(props, "Counts")],
        old_ids=strings(old, "NetworkInterfaceIds"), old_total=sum(int(c) for c in strings(old, "Counts")),
        rolling_back=rolling_back, published=_published(stack_id, str(props.get("PublishedOutput") or "")),
    )  # fmt: skip
    return ",".join(addresses)


def _published(stack_id: str, output: str) -> list[str]:
    """The addresses the stack's `output` holds now, in order: what the cluster and the Compute stack use.
    The output is this resource's own Addresses (hubspoke/stacks/storage.py), so while the resource runs it
    still holds the value of the last deploy; no such output means the stack publishes none yet."""
    if not output or not stack_id:
        return []
    stacks = aws("cloudformation").describe_stacks(StackName=stack_id)["Stacks"]
    found = [o for s in stacks for o in s.get("Outputs") or [] if o.get("OutputKey") == output]
    return [a.strip() for a in str(found[0]["OutputValue"]).split(",") if a.strip()] if found else []


def converge_cluster(event: Mapping[str, Any], deadline: Deadline) -> dict[str, Any]:
    props = event["ResourceProperties"]
    spec = cluster_spec(props)
    password = read_secret(str(props["AdminSecretArn"]))
    ledger = nodes.CreateTag(aws("ec2"), spec.node_instance_ids[0])
    cluster_id, views = cluster.ensure_formed(spec, password, deadline, ledger)
    client, _ = login(spec.node_ips, spec.rest_port, password, deadline, what=f"cluster {spec.cluster_name}")
    cluster.ensure_membership(client, spec, views)
    if spec.floating_ips:
        network.ensure_floating_ips(client, spec.floating_ips, spec.floating_netmask)
    _ensure_exports(client, props)
    log.info("cluster %s (%s) converged", spec.cluster_name, cluster_id)
    return {"ClusterId": cluster_id}


def _ensure_exports(client: Any, props: Mapping[str, Any]) -> None:
    """The cluster's Region-local NFS exports: ExportPaths read-write, ReadOnlyExportPaths read-only.

    The hub's dataset is exported read-only: its sealed versions are written only inside Qumulo (Shift-From, the
    REST seal), never over NFS, and a read-only host access rule gives the allowed hosts "limited access to the
    NFS export" (Qumulo administrator guide, "Configuring and Troubleshooting Host Access Rules for NFS
    Exports", the Read-only option; REST restriction field read_only, qumulo.rest.nfs NFSExportRestriction).
    An export created read-write by an earlier release is modified in place (exports.ensure_export)."""
    cidrs = strings(props, "ClientCidrs")
    for path in strings(props, "ExportPaths"):
        exports.ensure_export(client, exports.ExportSpec(path, cidrs, read_only=False, create_path=True))
    for path in strings(props, "ReadOnlyExportPaths"):
        exports.ensure_export(client, exports.ExportSpec(path, cidrs, read_only=True, create_path=True))


def converge_storage(event: Mapping[str, Any], deadline: Deadline, status: str) -> dict[str, Any]:
    """The buckets the cluster lacks, then the capacity limit (Qumulo's order: qumulo-terraform-gcp @ a30b449c,
    provision.py add_object_buckets -> update_capacity_limit), with the quorum whole before each."""
    props = event["ResourceProperties"]
    spec = storage_spec(props)
    cluster.require_active(spec, deadline)
    password = read_secret(str(props["AdminSecretArn"]))
    client, _ = login(spec.node_ips, spec.rest_port, password, deadline, what=f"cluster {spec.cluster_name}")
    capacity.ensure_uris(client, spec.object_storage_uris, rolling_back=status == nodes.ROLLING_BACK)
    before = event.get("ClampBefore")
    ledger = nodes.CreateTag(aws("ec2"), spec.node_instance_ids[0], key=clamp_sent_tag())
    capacity.ensure_limit(client, spec.usable_capacity_bytes, None if before in (None, "") else int(before),
                          ledger, str(event.get("RequestId") or event.get("StartedAt") or ""))  # fmt: skip
    return {"Buckets": str(len(spec.object_storage_uris)), "CapacityStep": "done"}


def storage_settled(event: Mapping[str, Any], error: Exception) -> dict[str, Any] | None:
    """The answer for a Custom::CnqPersistentStorage poll that failed (its error or its timeout) once the buckets
    this update adds may be in the cluster: complete, with the failure reported, never fail. A failure would roll
    the update back and take the new buckets and the nodes' grants on them out of the stack while Qumulo writes to
    them, which it cannot stop (capacity.py). None (fail as usual) when this update adds no bucket or the cluster
    answers that it holds none of them; a cluster that cannot be read may hold them."""
    props, old = event.get("ResourceProperties") or {}, event.get("OldResourceProperties") or {}
    new = [u for u in strings(props, "ObjectStorageUris") if u not in strings(old, "ObjectStorageUris")]
    if event.get("RequestType") != "Update" or not new:
        return None
    try:
        spec = storage_spec(props)
        client, _ = login(spec.node_ips, spec.rest_port, read_secret(str(props["AdminSecretArn"])),
                          Deadline.after(30.0), what=f"cluster {spec.cluster_name}")  # fmt: skip
        if not set(new) & set(capacity.current_uris(client)):
            return None
        state = f"the {len(new)} new bucket(s) are in the cluster; the capacity step did not finish: {error}"
    except Exception as unread:  # any failure to read means the add may have landed
        state = (
            f"the cluster could not say whether it holds the new bucket(s) ({unread}); first failure: {error}"
        )
    log.warning("persistent storage: %s; the deploy completes so no rollback takes the buckets away; deploy "
                "again to finish the capacity limit", state)  # fmt: skip
    return {"Buckets": str(len(strings(props, "ObjectStorageUris"))), "CapacityStep": state[:900]}
