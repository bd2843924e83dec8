"""Create, converge and remove a spoke's Cloud Data Fabric portal to its hub (Cloud Data Fabric v2 REST API).

The spoke proposes (POST /v2/portal/spokes/, then /v2/portal/spokes/{id}/roots/), the hub accepts
(POST /v2/portal/hubs/{id}/accept) through the hub's REST API over the peering. A Qumulo cluster hosts at
most one spoke portal, so "the spoke portal" of a spoke cluster is unambiguous.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qumulo.lib.request import RequestError
from qumulo.rest.portal import EvictionSettings, PortalHost

from .session import Deadline, ProvisioningError, describe, wait_until

log = logging.getLogger(__name__)

PORTAL_TYPES = {"read_only": "PORTAL_READ_ONLY", "read_write": "PORTAL_READ_WRITE"}


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


def the_spoke_portal(spoke: Any) -> Any | None:
    portals = spoke.portal.v2_list_spoke_portals()
    if len(portals) > 1:
        raise ProvisioningError(f"the spoke cluster has {len(portals)} spoke portals; Qumulo allows one")
    return portals[0] if portals else None


def _root_paths(spoke: Any, portal: Any) -> dict[str, Any]:
    """The portal's root pairs keyed by the spoke-side path (GET /v1/files/{id}/info/attributes)."""
    return {_norm(spoke.fs.get_file_attr(id_=pair.local_root)["path"]): pair for pair in portal.roots}


def _hub_portal_for(hub: Any, spoke_uuid: str) -> Any | None:
    return next((p for p in hub.portal.v2_list_hub_portals() if p.spoke_cluster_uuid == spoke_uuid), None)


def ensure_portal(spoke: Any, hub: Any, spec: PortalSpec, deadline: Deadline) -> int:
    """Converge the spoke portal, its root and the hub's acceptance; return the spoke portal ID."""
    portal = the_spoke_portal(spoke)
    if portal is None:
        log.info("creating the spoke portal towards %s", ", ".join(spec.hub_portal_hosts))
        portal = spoke.portal.v2_create_portal(
            spec.portal_type, _hosts(spec.hub_portal_hosts, spec.portal_port)
        )
    elif not _same_hosts(portal.hub_hosts, spec.hub_portal_hosts, spec.portal_port):
        portal = spoke.portal.v2_modify_spoke_portal_host(
            portal.id, _hosts(spec.hub_portal_hosts, spec.portal_port)
        )
    if _norm(spec.spoke_root) not in _root_paths(spoke, portal):
        portal = spoke.portal.v2_propose_spoke_portal_root(portal.id, spec.spoke_root, spec.hub_root)

    spoke_uuid = cluster_uuid(spoke)
    hub_portal = wait_until(
        deadline, "hub: the proposed hub portal to appear", lambda: _hub_portal_for(hub, spoke_uuid)
    )
    if hub_portal.state == "PENDING":
        # Accepting bounces quorum on both clusters for under 30 s (Qumulo docs); the waits below absorb it.
        hub_portal = hub.portal.v2_accept_hub_portal(
            hub_portal.id,
            _hosts(spec.spoke_portal_hosts, spec.portal_port),
            authorized_roots=list(hub_portal.pending_roots),
        )
    else:
        for root in hub_portal.pending_roots:
            hub_portal = hub.portal.v2_authorize_hub_portal_root(hub_portal.id, root)
        spoke_hosts_differ = not _same_hosts(
            hub_portal.spoke_hosts, spec.spoke_portal_hosts, spec.portal_port
        )
        if spoke_hosts_differ or hub_portal.type != spec.portal_type:
            hub.portal.v2_modify_hub_portal(
                hub_portal.id,
                spoke_hosts=_hosts(spec.spoke_portal_hosts, spec.portal_port) if spoke_hosts_differ else None,
                portal_type=spec.portal_type if hub_portal.type != spec.portal_type else None,
            )

    portal_id = int(portal.id)

    def active() -> bool | None:
        current = spoke.portal.v2_get_spoke_portal(portal_id)
        pair = _root_paths(spoke, current).get(_norm(spec.spoke_root))
        ready = (
            current.state == "ACCEPTED"
            and current.status == "ACTIVE"
            and pair is not None
            and pair.authorized
        )
        return True if ready else None

    wait_until(deadline, f"spoke portal {portal_id}: ACCEPTED, ACTIVE and root authorized", active)

    settings = spoke.portal.get_eviction_settings()
    if abs(settings.data.free_threshold - spec.eviction_free_threshold) > 1e-9:
        spoke.portal.set_eviction_settings(EvictionSettings(spec.eviction_free_threshold), settings.etag)
    return portal_id


def remove_spoke_portal(spoke: Any, spec: PortalSpec, deadline: Deadline, *, patience: float) -> str | None:
    """Delete the spoke portal; force it after `patience` seconds only when that loses no data.

    Returns the spoke cluster's UUID (for the hub-side clean-up), or None if there was no portal.
    A non-forced DELETE needs the hub (it syncs outstanding changes first). Forcing discards the spoke's
    cache and any writes not yet on the hub: harmless for a read-only spoke, data loss for a read-write
    one, which therefore fails here with a way out instead.
    """
    portal = the_spoke_portal(spoke)
    if portal is None:
        return None
    spoke_uuid = cluster_uuid(spoke)
    portal_id = int(portal.id)
    last_error = ""

    def gone() -> bool | None:
        nonlocal last_error
        if the_spoke_portal(spoke) is None:
            return True
        try:
            spoke.portal.v2_delete_spoke_portal(portal_id)
        except RequestError as error:
            # Qumulo refuses a non-forced delete while the hub is unreachable: keep trying until patience ends.
            last_error = describe(error)
        return None

    try:
        wait_until(deadline.sooner(patience), f"spoke portal {portal_id}: delete", gone)
        return spoke_uuid
    except ProvisioningError as error:
        reason = last_error or str(error)
    if spec.mode != "read_only":
        raise ProvisioningError(
            f"spoke portal {portal_id} is read-write and could not sync with the hub ({reason}); forcing the "
            "delete would discard writes not yet on the hub. Restore the hub path, or accept the loss and run "
            f"`qq portal_delete_spoke --id {portal_id} --force` (docs/runbooks/portal.md), then retry"
        )
    log.warning(
        "spoke portal %s: hub unreachable (%s); forcing the delete of a read-only cache", portal_id, reason
    )
    spoke.portal.v2_delete_spoke_portal(portal_id, force=True)
    wait_until(
        deadline, f"spoke portal {portal_id}: forced delete", lambda: the_spoke_portal(spoke) is None or None
    )
    return spoke_uuid


def remove_hub_portal(hub: Any, spoke_uuid: str) -> bool:
    """Delete the hub's record of this spoke (DELETE /v2/portal/hubs/{id}); the hub's data is untouched."""
    hub_portal = _hub_portal_for(hub, spoke_uuid)
    if hub_portal is None:
        return False
    try:
        hub.portal.v2_delete_hub_portal(hub_portal.id)
    except RequestError:
        # The spoke is already gone, so there is nothing left to sync: the forced delete loses nothing.
        hub.portal.v2_delete_hub_portal(hub_portal.id, force=True)
    return True
