"""Floating IPs on a host-managed network, the way current CNQ deployments run (GET/PUT /v3/network).

Qumulo's Terraform deploys with host-managed networking (qumulo-terraform-aws variables.tf,
networking_mode default "host_managed"); its node script installs Qumulo Core with
QUMULO_NETWORK_MANAGED_BY_HOST=true and its provisioner sets the floating IPs as a HOST network through
`network_v3_put_config`, then waits until `network_v3_status` reports floating addresses
(Qumulo/qumulo-terraform-gcp @ a30b449c, provision.py apply_initial_floating_ips). In that mode the
cluster has no managed interfaces: the SDK refuses interface changes (qumulo.rest.network_v3,
CannotModifyInterfaceInHostNetworks), so the MTU is the host's business (hubspoke.mtu on the nodes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .session import Pending, ProvisioningError

NETWORK_ID = 1
NETWORK_NAME = "default"


def _wanted(floating_ips: Sequence[str], netmask: str) -> dict[str, Any]:
    return {
        "id": NETWORK_ID,
        "name": NETWORK_NAME,
        "addresses": {
            "type": "HOST",
            "host_addresses": {"floating_ip_ranges": sorted(floating_ips), "netmask": netmask},
        },
    }


def _matches(network: dict[str, Any], floating_ips: Sequence[str], netmask: str) -> bool:
    addresses = network.get("addresses") or {}
    host = addresses.get("host_addresses") or {}
    return (
        addresses.get("type") == "HOST"
        and sorted(host.get("floating_ip_ranges") or []) == sorted(floating_ips)
        and host.get("netmask") == netmask
    )


def ensure_floating_ips(client: Any, floating_ips: Sequence[str], netmask: str) -> None:
    """One HOST network (id 1) carrying exactly `floating_ips`; Pending until every node reports them."""
    response = client.network_v3.get_config_raw()
    config = dict(response.data)
    if config.get("managed_interfaces") is not None:
        raise ProvisioningError(
            "the cluster manages its own network interfaces (Qumulo-managed networking); hubspoke deploys "
            "host-managed networking as Qumulo's current deployments do: rebuild the nodes from this stack's "
            "user data, which installs Qumulo Core with QUMULO_NETWORK_MANAGED_BY_HOST=true"
        )
    networks = list(config.get("frontend_networks") or [])
    current = next((n for n in networks if n.get("id") == NETWORK_ID), None)
    if current is None or not _matches(current, floating_ips, netmask):
        others = [n for n in networks if n.get("id") != NETWORK_ID]
        client.network_v3.put_config(
            {"managed_interfaces": None, "frontend_networks": [_wanted(floating_ips, netmask), *others]},
            if_match=response.etag,
        )
        raise Pending(f"floating IPs: {len(floating_ips)} requested on a HOST network")
    # Qumulo's provisioner treats the configuration as applied once the status mentions floating addresses.
    statuses = client.network_v3.list_network_statuses()
    if "floating_addresses" not in json.dumps(statuses):
        raise Pending("floating IPs: waiting for the nodes to report floating addresses")
