"""Floating IPs on a host-managed network, the way current CNQ deployments run (GET/PUT /v3/network).

Qumulo's Terraform deploys host-managed (qumulo-terraform-aws variables.tf networking_mode "host_managed") and
sets floating IPs as a HOST network, then waits for them (Qumulo/qumulo-terraform-gcp @ a30b449c, provision.py
apply_initial_floating_ips); the SDK then refuses interface changes (qumulo.rest.network_v3,
CannotModifyInterfaceInHostNetworks), so the MTU is the host's (hubspoke.mtu). The SDK takes a netmask or CIDR
and IP ranges (qumulo-api 7.10.2.1, qumulo/commands/network_v3.py, network_v3_put_config); in which form GET
answers is undocumented (ASSUMED either), so both sides are compared as a prefix length and a set of
addresses.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Sequence
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


def prefix_length(netmask: str) -> int | None:
    """'255.255.192.0' or '10.10.0.0/18' -> 18; None for anything else."""
    try:
        if "/" in netmask:
            return ipaddress.ip_network(netmask, strict=False).prefixlen
        return ipaddress.IPv4Network(f"0.0.0.0/{netmask}").prefixlen
    except ValueError:
        return None


def addresses(ranges: Iterable[str]) -> set[ipaddress.IPv4Address] | None:
    """'10.0.0.5', '10.0.0.5-7' or '10.0.0.5-10.0.0.7' -> the addresses; None if one does not parse."""
    found: set[ipaddress.IPv4Address] = set()
    try:
        for text in ranges:
            first, _, last = str(text).strip().partition("-")
            start = ipaddress.IPv4Address(first)
            if not last:
                found.add(start)
                continue
            end = ipaddress.IPv4Address(last if "." in last else f"{first.rsplit('.', 1)[0]}.{last}")
            found.update(ipaddress.IPv4Address(a) for a in range(int(start), int(end) + 1))
    except ValueError:
        return None
    return found


def _matches(network: dict[str, Any], floating_ips: Sequence[str], netmask: str) -> bool:
    config = network.get("addresses") or {}
    host = config.get("host_addresses") or {}
    have = addresses(host.get("floating_ip_ranges") or [])
    mask = prefix_length(str(host.get("netmask") or ""))
    return (
        config.get("type") == "HOST"
        and have is not None
        and have == addresses(floating_ips)
        and mask is not None
        and mask == prefix_length(netmask)
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
