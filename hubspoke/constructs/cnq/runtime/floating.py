"""The cluster's floating IPs as secondary private IPs of its nodes' interfaces, assigned by count and never
reconciled per interface afterwards (Custom::CnqFloatingIps).

Qumulo Core moves them between interfaces through the EC2 API, so a template count
(SecondaryPrivateIpAddressCount, "Update requires: No interruption") would be set back on update and reported
as drift; Qumulo's deployments let the cloud's state win (qumulo-terraform-gcp @ a30b449c, qcluster/main.tf
ignore_changes network_interface). So addresses are assigned to a new interface and then only the cluster's
total is kept. Removing a declared count may unassign addresses (AWS::EC2::NetworkInterface registry schema,
update handler permissions, cfn-lint 1.58.0), so the published FloatingIps are re-assigned exactly
(AssignPrivateIpAddresses AllowReassignment, botocore ec2 model) and answered first, in published order.
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
    as far as the cluster's total, sum(counts), is short, then top the total up (Qumulo spreads them itself).

    Never unassigns: a lower total is refused outside a rollback (Qumulo and its clients hold the addresses).
    `published` addresses no interface holds are assigned back first. Returns every held secondary address,
    the published in their order, then the others in numeric order."""
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
