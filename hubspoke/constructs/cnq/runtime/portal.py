"""Create, converge and remove a spoke's Cloud Data Fabric portal to its hub (Cloud Data Fabric v2 REST API).

The spoke proposes (POST /v2/portal/spokes/, then its roots/), the hub accepts (/v2/portal/hubs/{id}/accept)
over the peering. A cluster has up to 32 spokes (7.5.0.3+) but one relationship per remote cluster, so "our"
portal is the one whose `hub_id` (qumulo.rest.portal.MultiRootSpokePortal) is our hub; both must run one
release (Qumulo/docs, admin-guides/cloud-data-fabric/). v2 states are PENDING, ACCEPTED, DELETING
(rest-api-guide/cloud-data-fabric-v2/v2_portal_spokes_id.md @ bcb748d2); a create that cannot reach the hub
may be retried (configuring-portal-relationship.md, "Step 1: Create the Spoke Portal"). Accept, change and
delete bounce both quorums for under 30 s (Qumulo/docs _config.yml, gns.quorumBounce): polls retry 5xx.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qumulo.lib.request import RequestError
from qumulo.rest.portal import EvictionSettings, PortalHost

from .cluster import numeric_version
from .session import Pending, ProvisioningError, describe

log = logging.getLogger(__name__)

PORTAL_TYPES = {"read_only": "PORTAL_READ_ONLY", "read_write": "PORTAL_READ_WRITE"}
# The v2 portal states (v2_portal_spokes_id.md @ bcb748d2: "PENDING", "ACCEPTED", "DELETING").
PENDING, ACCEPTED, DELETING = "PENDING", "ACCEPTED", "DELETING"


@dataclass(frozen=True)
class PortalSpec:
    """What the stack asks of one spoke portal (the custom resource's properties, parsed)."""

    hub_portal_hosts: tuple[str, ...]
    spoke_portal_hosts: tuple[str, ...]
    portal_port: int
    hub_root: str
    spoke_root: str
    mode: str
    eviction_free_threshold: float

    @property
    def portal_type(self) -> str:
        return PORTAL_TYPES[self.mode]


def _hosts(addresses: Sequence[str], port: int) -> list[PortalHost]:
    return [PortalHost(address=a, port=port) for a in addresses]


def _same_hosts(have: Sequence[PortalHost], want: Sequence[str], port: int) -> bool:
    return sorted((h.address, h.port) for h in have) == sorted((a, port) for a in want)


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


def cluster_uuid(client: Any) -> str:
    return str(client.node_state.get_node_state()["cluster_id"])


def release(client: Any) -> str:
    return numeric_version(str(client.version.version()["revision_id"]))


def ours(spoke: Any, hub_uuid: str | None, spec: PortalSpec) -> Any | None:
    """Our spoke portal: its hub is our hub cluster, or (without the hub's UUID) it points at our hub hosts."""
    portals = spoke.portal.v2_list_spoke_portals()
    linked = [
        p
        for p in portals
        if (
            p.hub_cluster_uuid == hub_uuid
            if hub_uuid
            else _same_hosts(p.hub_hosts, spec.hub_portal_hosts, spec.portal_port)
        )
    ]
    if len(linked) > 1:
        raise ProvisioningError(
            f"the spoke cluster has {len(linked)} portals to this hub; Qumulo allows one relationship per "
            "remote cluster: delete the extra ones (docs/runbooks/portal.md)"
        )
    return linked[0] if linked else None


def _root_paths(spoke: Any, portal: Any) -> dict[str, Any]:
    """The portal's root pairs keyed by the spoke-side path (GET /v1/files/{id}/info/attributes)."""
    return {_norm(spoke.fs.get_file_attr(id_=pair.local_root)["path"]): pair for pair in portal.roots}


def _check_roots(spoke: Any, hub: Any, portal: Any, spec: PortalSpec) -> Any | None:
    """Our root pair, or None if not proposed yet; refuses roots that moved (compared with what exists)."""
    pairs = _root_paths(spoke, portal)
    pair = pairs.get(_norm(spec.spoke_root))
    hub_root_id = str(hub.fs.get_file_attr(path=spec.hub_root)["id"])
    if (pair is None and pairs) or (pair is not None and str(pair.remote_root) != hub_root_id):
        raise ProvisioningError(
            f"the portal's roots are {sorted(pairs)} on the spoke; the config asks {spec.spoke_root} -> hub "
            f"{spec.hub_root}. An existing portal's root cannot be moved in place. Re-create the portal "
            "(docs/runbooks/portal.md, 'Re-creating a portal')"
        )
    return pair


def ensure_portal(spoke: Any, hub: Any, spec: PortalSpec) -> int:
    """One step towards an authorized, ACTIVE portal with our settings; Pending until it is; returns its ID."""
    spoke_release, hub_release = release(spoke), release(hub)
    if spoke_release != hub_release:
        raise ProvisioningError(
            f"the spoke runs Qumulo Core {spoke_release} and the hub {hub_release}; a spoke portal is "
            "inaccessible when the two clusters run different releases: upgrade one to match"
        )
    portal = ours(spoke, cluster_uuid(hub), spec)
    if portal is None:
        log.info("creating the spoke portal towards %s", ", ".join(spec.hub_portal_hosts))
        try:
            portal = spoke.portal.v2_create_portal(
                spec.portal_type, _hosts(spec.hub_portal_hosts, spec.portal_port)
            )
        except RequestError as error:
            # "configuration can be attempted again"; whether Qumulo answers 4xx or 5xx is not documented
            # (ASSUMED either), so both are tried again until the deadline: the hub's REST API answered,
            # so what failed is portal traffic (TCP 3713 to the hub's portal hosts).
            raise Pending(
                f"spoke portal create towards {', '.join(spec.hub_portal_hosts)} port {spec.portal_port} "
                f"refused ({describe(error)}); trying again"
            ) from error
    if portal.state == DELETING:
        raise Pending(f"spoke portal {portal.id} towards this hub is still deleting")
    if not _same_hosts(portal.hub_hosts, spec.hub_portal_hosts, spec.portal_port):
        portal = spoke.portal.v2_modify_spoke_portal_host(
            portal.id, _hosts(spec.hub_portal_hosts, spec.portal_port)
        )
    if _check_roots(spoke, hub, portal, spec) is None:
        portal = spoke.portal.v2_propose_spoke_portal_root(portal.id, spec.spoke_root, spec.hub_root)

    try:
        hub_portal = hub.portal.v2_get_hub_portal(portal.hub_id)
    except RequestError as error:
        if error.status_code != 404:
            raise
        raise ProvisioningError(
            f"the hub has no portal {portal.hub_id}, which spoke portal {portal.id} points at: it was deleted on "
            "the hub. Re-create the portal (docs/runbooks/portal.md, 'Re-creating a portal')"
        ) from error
    if hub_portal.state == PENDING:
        # Accepting bounces quorum on both clusters for under 30 s (Qumulo docs); the next polls absorb it.
        hub.portal.v2_accept_hub_portal(
            hub_portal.id,
            _hosts(spec.spoke_portal_hosts, spec.portal_port),
            authorized_roots=list(hub_portal.pending_roots),
        )
        raise Pending(f"hub portal {hub_portal.id}: accepted")
    for root in hub_portal.pending_roots:
        hub_portal = hub.portal.v2_authorize_hub_portal_root(hub_portal.id, root)
    spoke_hosts_differ = not _same_hosts(hub_portal.spoke_hosts, spec.spoke_portal_hosts, spec.portal_port)
    type_differs = hub_portal.type != spec.portal_type
    if spoke_hosts_differ or type_differs:
        hub.portal.v2_modify_hub_portal(
            hub_portal.id,
            spoke_hosts=_hosts(spec.spoke_portal_hosts, spec.portal_port) if spoke_hosts_differ else None,
            portal_type=spec.portal_type if type_differs else None,
        )
    if type_differs:
        # Not done in the poll that sent the type: the drain has to be seen starting, or ending, on a read
        # that comes after it (ASSUMED: Qumulo shows it by the next poll).
        raise Pending(f"hub portal {hub_portal.id}: type set to {spec.portal_type}; waiting for the spoke")

    current = spoke.portal.v2_get_spoke_portal(portal.id)
    pair = _root_paths(spoke, current).get(_norm(spec.spoke_root))
    # Going read-only "drains the spoke first" (qumulo-api 7.10.2.1, qumulo/commands/portal.py TYPE_HELP);
    # whether the spoke's record then shows the type is undocumented (ASSUMED either), so done is ACTIVE and
    # either record typed (the hub's from v2_get_hub_portal above).
    typed = spec.portal_type in (current.type, hub_portal.type)
    if not (
        current.state == ACCEPTED
        and current.status == "ACTIVE"
        and pair is not None
        and pair.authorized
        and typed
    ):
        raise Pending(
            f"spoke portal {portal.id}: {current.state}/{current.status} {current.type} (hub record: "
            f"{hub_portal.type}), waiting for ACCEPTED/ACTIVE {spec.portal_type}"
        )
    if current.type != spec.portal_type:
        log.warning(
            "spoke portal %s shows type %s while the hub's record shows %s: accepted (ASSUMED: the spoke's "
            "record need not reflect a type set on the hub; docs/runbooks/portal.md)",
            portal.id,
            current.type,
            hub_portal.type,
        )
    settings = spoke.portal.get_eviction_settings()
    if abs(settings.data.free_threshold - spec.eviction_free_threshold) > 1e-9:
        spoke.portal.set_eviction_settings(EvictionSettings(spec.eviction_free_threshold), settings.etag)
    return int(portal.id)


def hub_id_of(spoke: Any, spec: PortalSpec) -> int | None:
    """The hub-side ID of our portal, read before deleting it (the spoke forgets it afterwards)."""
    portal = ours(spoke, None, spec)
    return int(portal.hub_id) if portal is not None else None


def remove_spoke_portal(spoke: Any, spec: PortalSpec, *, waited: float, patience: float) -> None:
    """One step of deleting our spoke portal; forced after `patience` seconds only when that loses no data.

    A delete syncs outstanding changes first and may "stall in the Deleting state", which `--force` ends
    (Qumulo/docs, cloud-data-fabric/configuring-portal-relationship.md, "Step 1: Delete the Spoke Portal" @
    9b95eefa). So one non-forced DELETE (resent only if refused, ASSUMED possible), then force after
    `patience`: harmless for a read-only spoke; a read-write one would lose unsynced writes, so it fails with
    a way out.
    """
    portal = ours(spoke, None, spec)
    if portal is None:
        return
    reason = f"state {portal.state}, status {portal.status}"
    if waited < patience:
        if portal.state == DELETING:
            raise Pending(f"spoke portal {portal.id}: deleting (syncing outstanding changes to the hub)")
        try:
            spoke.portal.v2_delete_spoke_portal(portal.id)
        except RequestError as error:
            # ASSUMED: a release that refuses a non-forced delete without the hub; tried again until patience.
            raise Pending(f"spoke portal {portal.id}: delete refused ({describe(error)})") from error
        raise Pending(f"spoke portal {portal.id}: delete requested")
    if spec.mode != "read_only":
        raise ProvisioningError(
            f"spoke portal {portal.id} is read-write and still not deleted after {patience:.0f} s ({reason}); "
            "forcing the delete would discard writes not yet on the hub. Restore the hub path, or accept the "
            f"loss and run `qq portal_delete_spoke --id {portal.id} --force` (docs/runbooks/portal.md), then retry"
        )
    log.warning(
        "spoke portal %s: not deleted after %.0f s (%s); forcing the delete of a read-only cache",
        portal.id, patience, reason,
    )  # fmt: skip
    spoke.portal.v2_delete_spoke_portal(portal.id, force=True)
    raise Pending(f"spoke portal {portal.id}: forced delete requested")


def remove_hub_portal(hub: Any, hub_id: int) -> bool:
    """Delete the hub's record of this portal by its ID (DELETE /v2/portal/hubs/{id}); the hub's data stays."""
    try:
        hub.portal.v2_get_hub_portal(hub_id)
    except RequestError as error:
        if error.status_code == 404:
            return False  # the relationship ended cleanly: Qumulo removed both records itself
        raise
    try:
        hub.portal.v2_delete_hub_portal(hub_id)
    except RequestError:
        # The spoke side is already gone, so there is nothing left to sync: the forced delete loses nothing.
        hub.portal.v2_delete_hub_portal(hub_id, force=True)
    return True
