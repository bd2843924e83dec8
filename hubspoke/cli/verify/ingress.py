"""Verify's cross-Region security-group check: the group admits exactly the peer CIDRs on the ports of ports.py.

The group is the Network stack's PeerPathSecurityGroupId; its ingress is written by constructs/peering.py
(PeerSide: one rule per peer CIDR and port of its direction, ports.py FROM_SPOKE on the hub and FROM_HUB in
a spoke, from the spoke's Network stack and the hub's Link stacks). Security groups cannot be referenced across Regions (VPC peering guide), so any other
source, a group or prefix list included, is not ours. A rule deleted outside CloudFormation is not restored
by redeploying an unchanged template, so the fixes name the EC2 call that restores or removes exactly it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify.live import Context
from hubspoke.config import RegionConfig
from hubspoke.outputs import PEER_PATH_SECURITY_GROUP
from hubspoke.ports import FROM_HUB, FROM_SPOKE, PeerPort
from hubspoke.topology import stack_id

# EC2 IpProtocol accepts names or IANA numbers; DescribeSecurityGroups answers names for these three.
_PROTOCOL_NAMES = {"6": "tcp", "17": "udp", "1": "icmp"}

Rule = tuple[str, int | None, int | None, str]
"""(protocol, FromPort, ToPort, source): one source of one IpPermission; for ICMP the ports are type and code."""


def admitted_ports(ctx: Context, region: RegionConfig) -> tuple[PeerPort, ...]:
    """The hub's group admits the spokes on FROM_SPOKE, a spoke's group admits the hub on FROM_HUB (ports.py)."""
    return FROM_SPOKE if region.region == ctx.config.hub.region else FROM_HUB


def expected_ingress(ctx: Context, region: RegionConfig) -> set[Rule]:
    """Every peer CIDR of the Region on every port of its direction, as PeerSide writes the ingress rules."""
    return {
        (p.protocol, p.port, p.icmp_code if p.protocol == "icmp" else p.port, cidr)
        for cidr in ctx.config.peer_cidrs(region)
        for p in admitted_ports(ctx, region)
    }


def live_ingress(group: dict[str, Any]) -> set[Rule]:
    """A DescribeSecurityGroups group's IpPermissions, one rule per source (CIDR, group, prefix list, IPv6)."""
    rules: set[Rule] = set()
    for perm in group.get("IpPermissions", []):
        proto = str(perm.get("IpProtocol", ""))
        proto = _PROTOCOL_NAMES.get(proto, proto)
        ports = (perm.get("FromPort"), perm.get("ToPort"))
        sources = [r["CidrIp"] for r in perm.get("IpRanges", [])]
        sources += [r["CidrIpv6"] for r in perm.get("Ipv6Ranges", [])]
        sources += [f"security group {p['GroupId']}" for p in perm.get("UserIdGroupPairs", [])]
        sources += [f"prefix list {p['PrefixListId']}" for p in perm.get("PrefixListIds", [])]
        rules |= {(proto, *ports, source) for source in sources}
    return rules


def _label(rule: Rule) -> str:
    proto, start, end, _ = rule
    if proto == "-1":
        return "all traffic"
    if proto == "icmp":
        return f"ICMP {start}/{end}"
    return f"{proto.upper()} {start}" if start == end else f"{proto.upper()} {start}-{end}"


def _permissions(rules: Iterable[Rule]) -> str:
    """The rules as EC2 IpPermissions JSON, for --ip-permissions."""
    perms = []
    for proto, start, end, source in sorted(rules, key=str):
        perm: dict[str, Any] = {"IpProtocol": proto}
        if start is not None:
            perm |= {"FromPort": start, "ToPort": end}
        if source.startswith("security group "):
            perm["UserIdGroupPairs"] = [{"GroupId": source.removeprefix("security group ")}]
        elif source.startswith("prefix list "):
            perm["PrefixListIds"] = [{"PrefixListId": source.removeprefix("prefix list ")}]
        elif ":" in source:
            perm["Ipv6Ranges"] = [{"CidrIpv6": source}]
        else:
            perm["IpRanges"] = [{"CidrIp": source}]
        perms.append(perm)
    return json.dumps(perms, separators=(",", ":"))


def security_group_rows(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    group_id = ctx.stacks.output(stack_id("network", code), PEER_PATH_SECURITY_GROUP.key())
    # EC2 DescribeSecurityGroups, filter group-id: SecurityGroups[].IpPermissions[].IpProtocol, FromPort, ToPort,
    # IpRanges, Ipv6Ranges, UserIdGroupPairs, PrefixListIds.
    found = ctx.clients("ec2", code).describe_security_groups(
        Filters=[{"Name": "group-id", "Values": [group_id]}]
    )["SecurityGroups"]
    groups = [g for g in found if g.get("GroupId") == group_id]  # the filter narrows; the ID decides
    if not groups:
        return [
            CheckResult(
                code,
                "security group",
                "fail",
                f"{group_id} does not exist",
                ctx.gone_fix(stack_id("network", code), group_id),
            )
        ]
    wanted, live = expected_ingress(ctx, region), live_ingress(groups[0])
    where = f"--group-id {group_id} --region {code}"
    rows = []
    for source in sorted({r[3] for r in wanted - live}):
        missing = sorted((r for r in wanted - live if r[3] == source), key=str)
        rows.append(
            CheckResult(
                code,
                "security group",
                "fail",
                f"{group_id} does not admit peer {source} on {', '.join(_label(r) for r in missing)}",
                f"aws ec2 authorize-security-group-ingress {where} --ip-permissions '{_permissions(missing)}'",
            )
        )
    for source in sorted({r[3] for r in live - wanted}):
        extra = sorted((r for r in live - wanted if r[3] == source), key=str)
        peer = (
            "a configured peer CIDR"
            if source in ctx.config.peer_cidrs(region)
            else "not a configured peer CIDR"
        )
        rows.append(
            CheckResult(
                code,
                "security group",
                "fail",
                f"{group_id} admits {source} ({peer}) on {', '.join(_label(r) for r in extra)}: "
                "the cross-Region group admits only peer CIDRs on the cross-Region ports",
                f"aws ec2 revoke-security-group-ingress {where} --ip-permissions '{_permissions(extra)}'",
            )
        )
    if rows:
        return rows
    ports = ", ".join(p.label for p in admitted_ports(ctx, region))
    return [
        CheckResult(
            code,
            "security group",
            "pass",
            f"{group_id} admits exactly {', '.join(ctx.config.peer_cidrs(region)) or 'nothing'} on {ports}",
        )
    ]
