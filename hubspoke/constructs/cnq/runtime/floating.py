"""The cluster's floating IPs as secondary private IPs of its nodes' interfaces, assigned by count and never
reconciled per interface afterwards (Custom::CnqFloatingIps).

Qumulo Core moves floating IPs between the nodes' interfaces through the EC2 API (the node role may
AssignPrivateIpAddresses / UnassignPrivateIpAddresses on them), so after a failover an interface holds more or
fewer than it was created with. Declared on AWS::EC2::NetworkInterface as SecondaryPrivateIpAddressCount
("Update requires: No interruption", CloudFormation Template Reference), the count is a property
CloudFormation owns: an update of the interface or a changed share sets it back and drift detection reports
Qumulo's moves. Qumulo's own deployments let the cloud provider's state win after create
(qumulo-terraform-gcp @ a30b449c, compute/module/sub-modules/qcluster/main.tf: lifecycle ignore_changes
includes network_interface), so the template declares no count: this module assigns the addresses when an
interface is new and afterwards only keeps the cluster's total, whichever interface holds them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .session import ProvisioningError

log = logging.getLogger(__name__)


def held(ec2: Any, eni_ids: Sequence[str]) -> dict[str, list[str]]:
    """Each interface's secondary private IPv4 addresses (DescribeNetworkInterfaces)."""
    answer = ec2.describe_network_interfaces(NetworkInterfaceIds=list(eni_ids))["NetworkInterfaces"]
    found = {
        str(eni["NetworkInterfaceId"]): sorted(
            str(a["PrivateIpAddress"]) for a in eni.get("PrivateIpAddresses") or [] if not a.get("Primary")
        )
        for eni in answer
    }
    return {eni_id: found.get(eni_id, []) for eni_id in eni_ids}


def converge(
    ec2: Any, eni_ids: Sequence[str], counts: Sequence[int], *, old_ids: Sequence[str] = (),
    old_total: int = 0, rolling_back: bool = False,
) -> list[str]:  # fmt: skip
    """Give each interface new to the resource (not in `old_ids`, holding none) its `counts[i]` secondary IPs,
    as far as the cluster's total, sum(counts), is short; then top the total up if it still is (Qumulo spreads
    the addresses over the nodes itself). Never unassigns: a lower
    total is refused outside a rollback (the addresses are in Qumulo's network configuration and its
    clients'). Returns every secondary address the interfaces hold, sorted."""
    if len(eni_ids) != len(counts):
        raise ProvisioningError(f"{len(eni_ids)} interfaces but {len(counts)} floating-IP counts")
    total = sum(counts)
    if old_total and total < old_total and not rolling_back:
        raise ProvisioningError(
            f"storage.floating_ip_count {old_total} -> {total}: the addresses are Qumulo's floating IPs, which "
            f"clients and portals use; set floating_ip_count back to {old_total}"
        )
    current = held(ec2, eni_ids)
    short = total - sum(len(a) for a in current.values())
    for eni_id, count in zip(eni_ids, counts, strict=True):
        if eni_id not in old_ids and not current[eni_id] and min(count, short) > 0:
            ec2.assign_private_ip_addresses(
                NetworkInterfaceId=eni_id, SecondaryPrivateIpAddressCount=min(count, short)
            )
            log.info("floating IPs: %d assigned to the new interface %s", min(count, short), eni_id)
            short -= min(count, short)
    current = held(ec2, eni_ids)
    short = total - sum(len(a) for a in current.values())
    if short > 0:
        fewest = min(eni_ids, key=lambda e: len(current[e]))
        ec2.assign_private_ip_addresses(NetworkInterfaceId=fewest, SecondaryPrivateIpAddressCount=short)
        log.info("floating IPs: %d more on %s, for a total of %d", short, fewest, total)
        current = held(ec2, eni_ids)
    return sorted({a for addresses in current.values() for a in addresses}, key=_numeric)


def _numeric(address: str) -> tuple[int, ...]:
    return tuple(int(part) for part in address.split("."))
