"""moto's EC2 made to draw private addresses as EC2 does: never one another interface of the subnet holds.

moto 5 draws each secondary address at random from the subnet's CIDR and checks it only against the interface
it is assigned to (moto/ec2/models/elastic_network_interfaces.py, NetworkInterfaceBackend.
assign_private_ip_addresses, and utils.random_private_ip), so two interfaces can end up holding one address
and a test counting the cluster's floating IPs fails about once in a few hundred runs. EC2 assigns "an
available private IPv4 address from the subnet" (EC2 User Guide, "Assign a secondary private IPv4 address",
and AssignPrivateIpAddresses in the botocore ec2 model), which no other interface holds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from moto.ec2.models import elastic_network_interfaces


def draw_unused_addresses(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Make moto's address draws unique for the rest of the test; answer the set of addresses drawn."""
    drawn: set[str] = set()
    original: Callable[..., str] = elastic_network_interfaces.random_private_ip

    def unused(cidr: str | None = None, ipv6: bool = False) -> str:
        while (address := original(cidr, ipv6)) in drawn:
            pass
        drawn.add(address)
        return address

    monkeypatch.setattr(elastic_network_interfaces, "random_private_ip", unused)
    return drawn
