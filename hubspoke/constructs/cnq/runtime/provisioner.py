"""Custom-resource handlers that form CNQ clusters and spoke portals (CDK Provider framework, async contract).

`on_event` validates and does the once-per-request work; `is_complete` does one bounded step a poll until done
(aws-cdk-lib custom_resources, "Asynchronous Providers: isComplete"), so formation is not squeezed into one
15-minute Lambda; a raised error's text is the reason CloudFormation shows. A Create or Update poll stops once
the stack no longer awaits it (nodes.require_awaited). Properties arrive as strings (custom-resource
contract).

Custom::CnqNodeShape  refuses a change CloudFormation would apply to every node at once (shape.py).
Custom::CnqCluster    forms the cluster, converges membership, floating IPs and exports. Delete: nothing.
Custom::CnqPersistentStorage  last: adds an update's buckets, then raises the capacity limit with the quorum
                      whole; last since Qumulo never gives a bucket back, so a failed update rolls back first.
Custom::CnqFloatingIps  assigns floating IPs to new interfaces, then keeps only the total (floating.py).
Custom::CnqPortal     a spoke's portal, export and eviction threshold. Delete: forced only with no data at
                      stake.
Custom::CnqIdentity   a least-privilege Qumulo role and user (identities.py). Delete: both, if the cluster
                      answers.
Custom::CnqNodeProtection  last: termination protection while the stack creates or updates; off on Delete.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from qumulo.lib.request import RequestError

from . import cluster_requests, exports, identities, nodes, portal, shape
from .props import DEFAULT_REST_PORT, aws, read_secret
from .props import require as _require
from .props import strings as _list
from .resources import (
    CLUSTER_RESOURCE,
    FLOATING_IPS_RESOURCE,
    IDENTITY_RESOURCE,
    NODE_PROTECTION_RESOURCE,
    NODE_SHAPE_RESOURCE,
    PERSISTENT_STORAGE_RESOURCE,
    PORTAL_RESOURCE,
)
from .session import (
    Deadline,
    Pending,
    ProvisioningError,
    ProvisioningTimeout,
    describe,
    login,
    wait_until,
)

log = logging.getLogger(__name__)
log.setLevel(logging.INFO)
# At DEBUG, qumulo.lib.request logs request bodies (the admin password in create and login) and
# botocore logs response bodies (GetSecretValue's SecretString): keep both quiet whatever the log level.
for _chatty in ("qumulo", "botocore", "boto3", "urllib3"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)

# Left for the framework to report after our own per-invocation deadline.
REPORT_RESERVE_SECONDS = 20.0
# Our own overall deadline ends this much before the framework's, so the failure names what was awaited.
OVERALL_RESERVE_SECONDS = 60.0
DEFAULT_PORTAL_PORT = 3713
DEFAULT_WAIT_SECONDS = 1800.0
# How long a portal delete waits for the hub before forcing (when forcing is safe).
DEFAULT_DELETE_PATIENCE_SECONDS = 300.0
# CloudFormation User Guide, "Custom resource request objects": RequestType is Create, Update or Delete.
REQUEST_TYPES = ("Create", "Update", "Delete")


def _port(props: Mapping[str, Any], side: str) -> int:
    return int(props.get(f"{side}RestPort") or DEFAULT_REST_PORT)


def _portal_spec(props: Mapping[str, Any]) -> portal.PortalSpec:
    _require(props, "SpokeRestAddresses", "SpokeSecretArn", "SpokePortalHosts", "HubRestAddresses",
             "HubSecretArn", "HubPortalHosts", "HubRoot", "SpokeRoot", "EvictionFreeThreshold")  # fmt: skip
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


def _identity_spec(props: Mapping[str, Any]) -> tuple[identities.IdentitySpec, str]:
    """The identity's spec and password; its username and password come from its own secret."""
    _require(props, "ClusterName", "RestAddresses", "AdminSecretArn", "IdentitySecretArn", "Role")
    username, password = identities.credentials(read_secret(str(props["IdentitySecretArn"])))
    spec = identities.IdentitySpec(
        role=str(props["Role"]), username=username, privileges=_list(props, "Privileges"),
        write_path=str(props.get("WritePath") or "") or None,
    )  # fmt: skip
    return spec, password


def _admin(props: Mapping[str, Any], deadline: Deadline) -> Any:
    client, _ = login(_list(props, "RestAddresses"), int(props.get("RestPort") or DEFAULT_REST_PORT),
                      read_secret(str(props["AdminSecretArn"])), deadline, what=str(props["ClusterName"]))  # fmt: skip
    return client


def _converge_identity(props: Mapping[str, Any], deadline: Deadline) -> dict[str, Any]:
    spec, password = _identity_spec(props)
    identities.ensure_identity(
        _admin(props, deadline), spec, password, addresses=_list(props, "RestAddresses"),
        port=int(props.get("RestPort") or DEFAULT_REST_PORT), deadline=deadline,
    )  # fmt: skip
    return {"Username": spec.username}


def _remove_identity(props: Mapping[str, Any], deadline: Deadline) -> None:
    """The user and the role go; a cluster that no longer answers holds nobody to remove."""
    try:
        spec, _ = _identity_spec(props)
        identities.remove_identity(_admin(props, deadline.sooner(60.0)), spec)
    except (ProvisioningError, RequestError, OSError) as error:
        log.warning("identity not removed (cluster or secret gone?): %s", describe(error))


def _login(props: Mapping[str, Any], side: str, deadline: Deadline) -> Any:
    client, _ = login(
        _list(props, f"{side}RestAddresses"), _port(props, side), read_secret(str(props[f"{side}SecretArn"])),
        deadline, what=side.lower(),
    )  # fmt: skip
    return client


# ---------------------------------------------------------------- once per request
def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Provider framework onEvent: validate, do the once-per-request work, hand over to is_complete."""
    request, kind = str(event["RequestType"]), str(event.get("ResourceType", ""))
    props = event.get("ResourceProperties") or {}
    old = event.get("OldResourceProperties") or {}
    deadline = Deadline.after(context.get_remaining_time_in_millis() / 1000.0 - REPORT_RESERVE_SECONDS)
    log.info("%s %s (%s)", request, kind, event.get("LogicalResourceId"))
    name = str(props.get("ClusterName") or event.get("LogicalResourceId"))
    result: dict[str, Any] = {"StartedAt": str(time.time())}
    try:
        if request not in REQUEST_TYPES:
            # Anything else is not CloudFormation's: acting on it as a Create would form or change a cluster.
            raise ProvisioningError(
                f"unknown request type {request!r}, expected one of {', '.join(REQUEST_TYPES)}"
            )
        if kind == NODE_SHAPE_RESOURCE:
            result["PhysicalResourceId"] = event.get("PhysicalResourceId") or f"cnq-nodes-{name}"
            if request != "Delete":
                shape.check_node_shape(
                    aws("ec2"), cluster=name, wanted=shape.NodeShape.from_properties(props)
                )
        elif kind == CLUSTER_RESOURCE:
            result["PhysicalResourceId"] = event.get("PhysicalResourceId") or f"cnq-cluster-{name}"
            if request != "Delete":
                result.update(
                    cluster_requests.cluster_event(
                        request, props, old, deadline, str(event.get("StackId") or "")
                    )
                )
        elif kind == FLOATING_IPS_RESOURCE:
            result["PhysicalResourceId"] = event.get("PhysicalResourceId") or f"cnq-floating-{name}"
            if request != "Delete":
                result["Data"] = {
                    "Addresses": cluster_requests.floating_ips(
                        request, props, old, str(event.get("StackId") or "")
                    )
                }
        elif kind == PERSISTENT_STORAGE_RESOURCE:
            result["PhysicalResourceId"] = event.get("PhysicalResourceId") or f"cnq-storage-{name}"
            if request != "Delete":
                result.update(
                    cluster_requests.storage_event(
                        request, props, old, deadline, str(event.get("StackId") or "")
                    )
                )
        elif kind == NODE_PROTECTION_RESOURCE:
            result["PhysicalResourceId"] = event.get("PhysicalResourceId") or f"cnq-protection-{name}"
            ids = list(_list(props, "NodeInstanceIds"))
            if request == "Delete":
                status = nodes.stack_status(aws("cloudformation"), str(event.get("StackId") or ""))
                nodes.lift_protection(
                    aws("ec2"), ids, first_create_failed=status == nodes.FIRST_CREATE_ROLLING_BACK
                )
            else:
                nodes.apply_protection(aws("ec2"), aws("cloudformation"), stack_id=str(event["StackId"]),
                                       instance_ids=ids, previous=list(_list(old, "NodeInstanceIds")))  # fmt: skip
        elif kind == IDENTITY_RESOURCE:
            result["PhysicalResourceId"] = (
                event.get("PhysicalResourceId") or f"cnq-identity-{props.get('Role')}"
            )
            _require(props, "ClusterName", "RestAddresses", "AdminSecretArn", "IdentitySecretArn", "Role")
        elif kind == PORTAL_RESOURCE:
            result["PhysicalResourceId"] = (
                event.get("PhysicalResourceId") or f"cnq-portal-{event.get('LogicalResourceId')}"
            )
            spec = _portal_spec(props)
            if request == "Delete":
                result["HubPortalId"] = _hub_portal_id(props, spec, deadline)
        else:
            raise ProvisioningError(f"unknown resource type {kind!r}")
    except ProvisioningError as error:
        raise type(error)(f"{kind} {request}: {error}") from error
    except Exception as error:
        # Anything the SDK raised past our own checks: report Qumulo's text, not a Python traceback.
        raise ProvisioningError(f"{kind} {request}: {describe(error)}") from error
    return result


def _hub_portal_id(props: Mapping[str, Any], spec: portal.PortalSpec, deadline: Deadline) -> str:
    """The hub-side ID of our portal, "" if there is none or the spoke cannot say within 60 s.

    A 5xx or a dropped connection is retried within that budget (wait_until): a portal change leaves both
    clusters re-forming quorum for under 30 s (Qumulo/docs _config.yml, gns.quorumBounce), and on_event's
    failures are final."""
    budget = deadline.sooner(60.0)
    try:
        spoke = _login(props, "Spoke", budget)
        hub_id = wait_until(
            budget, "spoke: reading the portal's hub ID", lambda: (portal.hub_id_of(spoke, spec),)
        )[0]
    except ProvisioningError as error:
        log.warning("spoke REST API unreachable, no portal to remove: %s", error)
        return ""
    return "" if hub_id is None else str(hub_id)


# ---------------------------------------------------------------- polled
def _converge_portal(event: Mapping[str, Any], deadline: Deadline) -> dict[str, Any]:
    props = event["ResourceProperties"]
    spec = _portal_spec(props)
    spoke = _login(props, "Spoke", deadline)
    # Reach the hub before touching the spoke, so an unreachable hub leaves nothing half-made.
    hub = _login(props, "Hub", deadline)
    portal_id = portal.ensure_portal(spoke, hub, spec)
    cidrs = _list(props, "ClientCidrs")
    if cidrs:
        exports.ensure_export(
            spoke, exports.ExportSpec(spec.spoke_root, cidrs, spec.mode == "read_only", False)
        )
    return {"SpokePortalId": str(portal_id)}


def _remove_portal(event: Mapping[str, Any], deadline: Deadline, waited: float) -> None:
    props = event["ResourceProperties"]
    spec = _portal_spec(props)
    patience = float(props.get("DeletePatienceSeconds") or DEFAULT_DELETE_PATIENCE_SECONDS)
    try:
        spoke = _login(props, "Spoke", deadline.sooner(60.0))
    except ProvisioningError as error:
        # No spoke cluster left to hold a portal: nothing to remove, and no data anywhere is at stake.
        log.warning("spoke REST API unreachable, nothing to remove: %s", error)
        return
    portal.remove_spoke_portal(spoke, spec, waited=waited, patience=patience)
    hub_id = str(event.get("HubPortalId") or "")
    if not hub_id:
        return
    try:
        portal.remove_hub_portal(_login(props, "Hub", deadline.sooner(60.0)), int(hub_id))
    except ProvisioningError as error:
        log.warning(
            "hub unreachable; its portal record %s stays until `qq portal_delete_hub --id %s` "
            "(docs/runbooks/portal.md): %s", hub_id, hub_id, error,
        )  # fmt: skip


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Provider framework isComplete: one bounded step; IsComplete false while Qumulo is still working.
    Custom::CnqPersistentStorage never fails once an update's new buckets may be in the cluster
    (cluster_requests.storage_settled)."""
    try:
        return _poll(event, context)
    except ProvisioningError as error:
        if event.get("ResourceType") != PERSISTENT_STORAGE_RESOURCE:
            raise
        settled = cluster_requests.storage_settled(event, error)
        if settled is None:
            raise
        return {"IsComplete": True, "Data": settled}


def _poll(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request, kind = str(event["RequestType"]), str(event.get("ResourceType", ""))
    props = event.get("ResourceProperties") or {}
    started = float(event.get("StartedAt") or time.time())
    waited = time.time() - started
    # The whole request (every poll) fits the budget, so the failure CloudFormation shows is ours, naming
    # what was awaited, and not its own timeout: no poll starts past it, and no poll runs beyond it.
    budget = float(props.get("WaitSeconds") or DEFAULT_WAIT_SECONDS) - OVERALL_RESERVE_SECONDS
    if waited >= budget:
        raise ProvisioningTimeout(
            f"{kind} {request}: gave up after {waited:.0f} s (budget {budget:.0f} s); the previous poll's log "
            "line says what it was waiting for"
        )
    lambda_left = context.get_remaining_time_in_millis() / 1000.0 - REPORT_RESERVE_SECONDS
    deadline = Deadline.after(min(lambda_left, budget - waited))
    try:
        status = ""
        converging = (CLUSTER_RESOURCE, PERSISTENT_STORAGE_RESOURCE, PORTAL_RESOURCE, IDENTITY_RESOURCE)
        if kind in converging and request != "Delete":
            status = nodes.require_awaited(aws("cloudformation"), str(event["StackId"]))
        if kind == CLUSTER_RESOURCE and request != "Delete":
            return {"IsComplete": True, "Data": cluster_requests.converge_cluster(event, deadline)}
        if kind == PERSISTENT_STORAGE_RESOURCE and request != "Delete":
            return {"IsComplete": True, "Data": cluster_requests.converge_storage(event, deadline, status)}
        if kind == PORTAL_RESOURCE and request != "Delete":
            return {"IsComplete": True, "Data": _converge_portal(event, deadline)}
        if kind == IDENTITY_RESOURCE:
            if request != "Delete":
                return {"IsComplete": True, "Data": _converge_identity(props, deadline)}
            _remove_identity(props, deadline)
        if kind == PORTAL_RESOURCE:
            _remove_portal(event, deadline, waited)
        return {"IsComplete": True}
    except (Pending, RequestError, OSError) as error:
        # Qumulo's own 4xx answers are final; a 5xx answer or a connection that failed may pass (a quorum
        # re-forming, a node restarting), so it is retried at the next poll until the deadline.
        if isinstance(error, RequestError) and error.status_code < 500:
            raise ProvisioningError(f"{kind} {request}: {describe(error)}") from error
        last = str(error) if isinstance(error, Pending) else describe(error)
        waited = time.time() - started
        if waited >= budget:
            raise ProvisioningTimeout(
                f"{kind} {request}: gave up after {waited:.0f} s; last: {last}"
            ) from None
        log.info("%s %s: not yet (%.0f s): %s", kind, request, waited, last)
        return {"IsComplete": False}
    except ProvisioningError as error:
        raise type(error)(f"{kind} {request}: {error}") from error
    except Exception as error:
        raise ProvisioningError(f"{kind} {request}: {describe(error)}") from error
