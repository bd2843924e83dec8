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

Upgrading a stack whose interfaces declared the count: removing the property is an update of each interface,
whose handler may call ec2:UnassignPrivateIpAddresses (AWS::EC2::NetworkInterface registry schema, update
handler permissions, as bundled in cfn-lint 1.58.0). The addresses the stack published before (its FloatingIps
output, which Qumulo's network configuration and the Compute stack's volumes use, by position) are therefore
re-assigned exactly (AssignPrivateIpAddresses PrivateIpAddresses + AllowReassignment, botocore ec2 model) and
answered first, in the published order, so no deploy moves an address to another position.
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
    old_total: int = 0, rolling_back: bool = False, published: Sequence[str] = (),
) -> list[str]:  # fmt: skip
    """Give each interface new to the resource (not in `old_ids`, holding none) its `counts[i]` secondary IPs,
    as far as the cluster's total, sum(counts), is short; then top the total up if it still is (Qumulo spreads
    the addresses over the nodes itself). Never unassigns: a lower
    total is refused outside a rollback (the addresses are in Qumulo's network configuration and its
    clients'). First, any `published` address (the stack's current output) none of the interfaces holds is
    assigned back. Returns every secondary address the interfaces hold: the published ones in their published
    order, then the others in numeric order."""
    if len(eni_ids) != len(counts):
        raise ProvisioningError(f"{len(eni_ids)} interfaces but {len(counts)} floating-IP counts")
    total = sum(counts)
    if old_total and total < old_total and not rolling_back:
        raise ProvisioningError(
            f"storage.floating_ip_count {old_total} -> {total}: the addresses are Qumulo's floating IPs, which "
            f"clients and portals use; set floating_ip_count back to {old_total}"
        )
    current = held(ec2, eni_ids)
    _reclaim(ec2, eni_ids, counts, current, published)
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
    holding = {a for addresses in current.values() for a in addresses}
    first = [a for a in dict.fromkeys(published) if a in holding]
    return first + sorted(holding - set(first), key=_numeric)


def _reclaim(
    ec2: Any,
    eni_ids: Sequence[str],
    counts: Sequence[int],
    current: dict[str, list[str]],
    published: Sequence[str],
) -> None:
    """Assign back the published addresses no interface holds (released by an interface update), each to the
    interface furthest below its count; AllowReassignment takes one back from another interface of the subnet."""
    holding = {a for addresses in current.values() for a in addresses}
    want = dict(zip(eni_ids, counts, strict=True))
    for address in [a for a in dict.fromkeys(published) if a and a not in holding]:
        target = min(eni_ids, key=lambda e: len(current[e]) - want[e])
        ec2.assign_private_ip_addresses(
            NetworkInterfaceId=target, PrivateIpAddresses=[address], AllowReassignment=True
        )
        current[target].append(address)
        log.warning("floating IPs: %s, published by the stack but held by no interface, assigned back to %s",
                    address, target)  # fmt: skip


def _numeric(address: str) -> tuple[int, ...]:
    return tuple(int(part) for part in address.split("."))
