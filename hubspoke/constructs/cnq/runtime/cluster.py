"""Form a Cloud Native Qumulo cluster once its nodes answer, then converge its network and NFS settings.

Every step reads first and changes only what differs, so a second run with the same properties changes
nothing. REST calls go through the qumulo-api SDK; the endpoint each step uses is named beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qumulo.rest.nfs import NFSExportRestriction

from .session import Deadline, ProvisioningError, anonymous_client, describe, wait_until

log = logging.getLogger(__name__)

# Qumulo's default cloud network: interface 1 (the frontend bond), network 1 (the untagged network).
INTERFACE_ID = "1"
NETWORK_ID = "1"


@dataclass(frozen=True)
class ClusterSpec:
    """What the stack asks of one cluster (the custom resource's properties, parsed)."""

    cluster_name: str
    node_ips: tuple[str, ...]
    node_instance_ids: tuple[str, ...]
    floating_ips: tuple[str, ...]
    object_storage_uris: tuple[str, ...]
    usable_capacity_bytes: int
    product_type: str
    peer_mtu: int
    rest_port: int


@dataclass(frozen=True)
class ExportSpec:
    """One NFS export: a filesystem path, published under the same name, for the given client CIDRs."""

    path: str
    client_cidrs: tuple[str, ...]
    read_only: bool
    # The hub creates its dataset directory; a spoke's portal root must not exist before the portal does.
    create_path: bool


def node_states(spec: ClusterSpec, deadline: Deadline) -> list[dict[str, Any]]:
    """GET /v1/node/state on every node (no login needed); None until all of them answer."""
    states = []
    for ip in spec.node_ips:
        client = anonymous_client(ip, spec.rest_port, deadline)
        states.append(dict(client.node_state.get_node_state()))
    return states


def ensure_formed(spec: ClusterSpec, password: str, deadline: Deadline) -> str:
    """Create the object-backed cluster if every node is still unconfigured; return the cluster UUID.

    POST /v5/cluster/object-backed/create (REST API guide, Cluster Creation), sent to the first node with
    that node's EC2 instance ID; then wait for the first quorum (GET /v1/node/state: ACTIVE).
    """
    states = wait_until(
        deadline, f"cluster {spec.cluster_name}: nodes answering", lambda: node_states(spec, deadline)
    )
    cluster_ids = {s.get("cluster_id") for s in states if s.get("state") != "UNCONFIGURED"}
    if len(cluster_ids) > 1:
        raise ProvisioningError(
            f"cluster {spec.cluster_name}: nodes belong to different clusters {sorted(map(str, cluster_ids))}; "
            "replace the stray nodes or remove them from the configuration"
        )
    if not cluster_ids:
        log.info("forming cluster %s from %d nodes", spec.cluster_name, len(spec.node_ips))
        first = anonymous_client(spec.node_ips[0], spec.rest_port, deadline)
        try:
            first.cluster.create_object_backed_cluster(
                cluster_name=spec.cluster_name,
                admin_password=password,
                host_instance_id=spec.node_instance_ids[0],
                object_storage_uris=list(spec.object_storage_uris),
                usable_capacity_clamp=spec.usable_capacity_bytes,
                product_type=spec.product_type,
                node_ips_and_fault_domains=[{"node_ip": ip, "fault_domain_id": None} for ip in spec.node_ips],
                eula_accepted=True,
            )
        except Exception as error:
            raise ProvisioningError(f"cluster {spec.cluster_name}: create: {describe(error)}") from error

    def quorum() -> str | None:
        state = anonymous_client(spec.node_ips[0], spec.rest_port, deadline).node_state.get_node_state()
        return (
            str(state["cluster_id"]) if state.get("state") == "ACTIVE" and state.get("cluster_id") else None
        )

    return wait_until(deadline, f"cluster {spec.cluster_name}: first quorum", quorum)


def ensure_floating_ips(client: Any, floating_ips: Sequence[str]) -> bool:
    """Tell Qumulo which secondary private IPs it may move between nodes (v2 network, network 1)."""
    current = client.network.get_network(INTERFACE_ID, NETWORK_ID)
    if sorted(current.get("floating_ip_ranges") or []) == sorted(floating_ips):
        return False
    client.network.modify_network(INTERFACE_ID, NETWORK_ID, floating_ip_ranges=list(floating_ips))
    return True


def ensure_mtu(client: Any, mtu: int) -> bool:
    """Pin the frontend interface MTU to the peer path's MTU (PATCH /v2/network/interfaces/1).

    Qumulo has no per-route MTU, and portal traffic (3713) and the hub's NFS replies cross the peering,
    which carries at most the peer MTU; inside the VPC 9001 would fit, but a packet larger than the
    peering allows is dropped when path-MTU discovery is filtered. The cost of the smaller frames on
    local traffic is under 6 %.
    """
    current = client.network.get_interface(INTERFACE_ID)
    if int(current.get("mtu") or 0) == mtu:
        return False
    client.network.modify_interface(INTERFACE_ID, mtu=mtu)
    return True


def _restriction(spec: ExportSpec) -> dict[str, Any]:
    return {
        "host_restrictions": sorted(spec.client_cidrs),
        "read_only": spec.read_only,
        "require_privileged_port": False,
        # Training jobs run as arbitrary UIDs and expect to see their own files: no squashing.
        "user_mapping": "NFS_MAP_NONE",
    }


def _matches(export: dict[str, Any], spec: ExportSpec) -> bool:
    restrictions = export.get("restrictions") or []
    if export.get("fs_path") != spec.path or len(restrictions) != 1:
        return False
    have, want = restrictions[0], _restriction(spec)
    return all(
        sorted(have.get(k) or []) == want[k] if k == "host_restrictions" else have.get(k) == want[k]
        for k in want
    )


def ensure_export(client: Any, spec: ExportSpec) -> bool:
    """One NFS export of `spec.path` for the VPC CIDRs (GET/POST/PATCH /v3/nfs/exports/); True if changed."""
    exports = client.nfs.nfs_list_exports()["entries"]
    existing = next((e for e in exports if e.get("export_path") == spec.path), None)
    restrictions = [NFSExportRestriction(_restriction(spec))]
    if existing is None:
        client.nfs.nfs_add_export(
            export_path=spec.path,
            fs_path=spec.path,
            description="hubspoke: managed by the Storage stack",
            restrictions=restrictions,
            allow_fs_path_create=spec.create_path,
        )
        return True
    if _matches(existing, spec):
        return False
    client.nfs.nfs_modify_export(
        existing["id"], fs_path=spec.path, restrictions=restrictions, allow_fs_path_create=spec.create_path
    )
    return True
