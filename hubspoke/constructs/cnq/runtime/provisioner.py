"""Custom-resource handler that provisions CNQ clusters and spoke portals (CDK Provider framework contract).

`on_event` returns {"PhysicalResourceId", "Data"} or raises; the framework reports the exception text to
CloudFormation as the failure reason, so every failure carries Qumulo's own error text. Two resource types:

Custom::CnqCluster  form the cluster, set the admin password from Secrets Manager, floating IPs, peer MTU,
                    and the NFS exports of the Region-local paths. Delete: nothing (data is never deleted).
Custom::CnqPortal   a spoke's portal to its hub, its NFS export, its eviction threshold.
                    Delete: remove the portal, forced after a bounded wait when the hub is unreachable.

Properties arrive as strings (CloudFormation's custom-resource contract); lists as lists of strings.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import boto3

from . import cluster, portal
from .session import Deadline, ProvisioningError, describe, login

log = logging.getLogger(__name__)
log.setLevel(logging.INFO)
# At DEBUG, qumulo.lib.request logs request bodies (the admin password in create and login) and
# botocore logs response bodies (GetSecretValue's SecretString): keep both quiet whatever the log level.
for _chatty in ("qumulo", "botocore", "boto3", "urllib3"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)

# Left for the framework to report the result after our own deadline has passed.
REPORT_RESERVE_SECONDS = 20.0
DEFAULT_REST_PORT = 8000
DEFAULT_PORTAL_PORT = 3713
# How long a portal delete waits for the hub before forcing (when forcing is safe).
DEFAULT_DELETE_PATIENCE_SECONDS = 300.0


def read_secret(arn: str) -> str:
    """The SecretString of `arn`, from the secret's own Region (a spoke reads its hub's secret)."""
    region = arn.split(":")[3]
    value = boto3.client("secretsmanager", region_name=region).get_secret_value(SecretId=arn)["SecretString"]
    return str(value)


def _list(props: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = props.get(key) or []
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    return tuple(str(v).strip() for v in value)


def _require(props: Mapping[str, Any], *keys: str) -> None:
    missing = [k for k in keys if props.get(k) in (None, "", [])]
    if missing:
        raise ProvisioningError(f"missing resource properties: {', '.join(missing)}")


def _exports(
    props: Mapping[str, Any], key: str, *, read_only: bool, create: bool
) -> list[cluster.ExportSpec]:
    cidrs = _list(props, "ClientCidrs")
    return [cluster.ExportSpec(path, cidrs, read_only, create) for path in _list(props, key)]


def provision_cluster(props: Mapping[str, Any], deadline: Deadline) -> dict[str, Any]:
    _require(
        props, "ClusterName", "NodeIps", "NodeInstanceIds", "ObjectStorageUris", "AdminSecretArn", "PeerMtu"
    )
    spec = cluster.ClusterSpec(
        cluster_name=str(props["ClusterName"]),
        node_ips=_list(props, "NodeIps"),
        node_instance_ids=_list(props, "NodeInstanceIds"),
        floating_ips=_list(props, "FloatingIps"),
        object_storage_uris=_list(props, "ObjectStorageUris"),
        usable_capacity_bytes=int(props["UsableCapacityBytes"]),
        product_type=str(props.get("ProductType") or "ACTIVE_WITH_STANDARD_STORAGE"),
        peer_mtu=int(props["PeerMtu"]),
        rest_port=int(props.get("RestPort") or DEFAULT_REST_PORT),
    )
    password = read_secret(str(props["AdminSecretArn"]))
    cluster_id = cluster.ensure_formed(spec, password, deadline)
    client, _ = login(spec.node_ips, spec.rest_port, password, deadline, what=f"cluster {spec.cluster_name}")
    changed = []
    if spec.floating_ips and cluster.ensure_floating_ips(client, spec.floating_ips):
        changed.append("floating IPs")
    if cluster.ensure_mtu(client, spec.peer_mtu):
        changed.append(f"MTU {spec.peer_mtu}")
    for export in _exports(props, "ExportPaths", read_only=False, create=True):
        if cluster.ensure_export(client, export):
            changed.append(f"export {export.path}")
    log.info("cluster %s (%s): %s", spec.cluster_name, cluster_id, ", ".join(changed) or "no change")
    return {"PhysicalResourceId": f"cnq-cluster-{cluster_id}", "Data": {"ClusterId": cluster_id}}


def _port(props: Mapping[str, Any], side: str) -> int:
    return int(props.get(f"{side}RestPort") or DEFAULT_REST_PORT)


def _portal_spec(props: Mapping[str, Any]) -> portal.PortalSpec:
    mode = str(props.get("Mode") or "read_only")
    if mode not in portal.PORTAL_TYPES:
        raise ProvisioningError(f"Mode must be one of {sorted(portal.PORTAL_TYPES)}, not {mode!r}")
    return portal.PortalSpec(
        hub_portal_hosts=_list(props, "HubPortalHosts"),
        spoke_portal_hosts=_list(props, "SpokePortalHosts"),
        portal_port=int(props.get("PortalPort") or DEFAULT_PORTAL_PORT),
        hub_root=str(props["HubRoot"]),
        spoke_root=str(props["SpokeRoot"]),
        mode=mode,
        eviction_free_threshold=float(props["EvictionFreeThreshold"]),
    )


def provision_portal(props: Mapping[str, Any], old: Mapping[str, Any], deadline: Deadline) -> dict[str, Any]:
    _require(
        props, "SpokeRestAddresses", "SpokeSecretArn", "SpokePortalHosts", "HubRestAddresses", "HubSecretArn",
        "HubPortalHosts", "HubRoot", "SpokeRoot", "EvictionFreeThreshold",
    )  # fmt: skip
    spec = _portal_spec(props)
    for key in ("HubRoot", "SpokeRoot"):
        if old and old.get(key) not in (None, props.get(key)):
            raise ProvisioningError(
                f"{key} changed from {old.get(key)} to {props.get(key)}; an existing portal's root cannot be "
                "moved in place. Re-create the portal (docs/runbooks/portal.md, 'Re-creating a portal')"
            )
    spoke_password = read_secret(str(props["SpokeSecretArn"]))
    hub_password = read_secret(str(props["HubSecretArn"]))
    spoke, _ = login(
        _list(props, "SpokeRestAddresses"), _port(props, "Spoke"), spoke_password, deadline, what="spoke"
    )
    # Reach the hub before touching the spoke, so an unreachable hub leaves nothing half-made.
    hub, hub_address = login(
        _list(props, "HubRestAddresses"), _port(props, "Hub"), hub_password, deadline, what="hub"
    )
    portal_id = portal.ensure_portal(spoke, hub, spec, deadline)
    export = cluster.ExportSpec(spec.spoke_root, _list(props, "ClientCidrs"), spec.mode == "read_only", False)
    if _list(props, "ClientCidrs"):
        cluster.ensure_export(spoke, export)
    spoke_uuid = portal.cluster_uuid(spoke)
    log.info("spoke portal %s active towards hub %s", portal_id, hub_address)
    return {
        "PhysicalResourceId": f"cnq-portal-{spoke_uuid}-{portal_id}",
        "Data": {"SpokePortalId": str(portal_id)},
    }


def remove_portal(props: Mapping[str, Any], deadline: Deadline) -> None:
    spec = _portal_spec(props)
    patience = float(props.get("DeletePatienceSeconds") or DEFAULT_DELETE_PATIENCE_SECONDS)
    try:
        spoke, _ = login(
            _list(props, "SpokeRestAddresses"), _port(props, "Spoke"), read_secret(str(props["SpokeSecretArn"])),
            deadline.sooner(patience), what="spoke",
        )  # fmt: skip
    except ProvisioningError as error:
        # No spoke cluster left to hold a portal: nothing to remove, and no data anywhere is at stake.
        log.warning("spoke REST API unreachable, nothing to remove: %s", error)
        return
    spoke_uuid = portal.remove_spoke_portal(spoke, spec, deadline, patience=patience)
    if spoke_uuid is None:
        return
    try:
        hub, _ = login(
            _list(props, "HubRestAddresses"), _port(props, "Hub"), read_secret(str(props["HubSecretArn"])),
            deadline.sooner(min(patience, 60.0)), what="hub",
        )  # fmt: skip
        portal.remove_hub_portal(hub, spoke_uuid)
    except ProvisioningError as error:
        log.warning(
            "hub unreachable; its portal record for spoke %s stays until `qq portal_delete_hub` "
            "(docs/runbooks/portal.md): %s", spoke_uuid, error,
        )  # fmt: skip


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """CDK Provider framework entry point."""
    request = str(event["RequestType"])
    kind = str(event.get("ResourceType", ""))
    props = event.get("ResourceProperties") or {}
    old = event.get("OldResourceProperties") or {}
    deadline = Deadline.after(context.get_remaining_time_in_millis() / 1000.0 - REPORT_RESERVE_SECONDS)
    log.info("%s %s (%s)", request, kind, event.get("LogicalResourceId"))
    try:
        if kind == "Custom::CnqCluster":
            if request == "Delete":
                # The cluster's data lives in retained S3 buckets; removing the resource never touches it.
                return {"PhysicalResourceId": event["PhysicalResourceId"]}
            return provision_cluster(props, deadline)
        if kind == "Custom::CnqPortal":
            if request == "Delete":
                remove_portal(props, deadline)
                return {"PhysicalResourceId": event["PhysicalResourceId"]}
            return provision_portal(props, old if request == "Update" else {}, deadline)
        raise ProvisioningError(f"unknown resource type {kind!r}")
    except ProvisioningError:
        raise
    except Exception as error:
        # Anything the SDK raised past our own checks: report Qumulo's text, not a Python traceback.
        raise ProvisioningError(f"{kind} {request}: {describe(error)}") from error
