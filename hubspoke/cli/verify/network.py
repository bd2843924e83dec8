"""Verify's network checks: the VPC's CIDRs and the peering routes (peering: peering.py, ingress: ingress.py).

IDs come from the Network stacks' outputs (hubspoke/outputs.py); what each resource must look like comes
from config: the peer CIDRs (HubSpokeConfig.peer_cidrs) and the route tables (layout.route_table_az_ids),
exactly what the Network and Link stacks create (constructs/peering.py, PeerSide). Peering is not
transitive (VPC peering guide): a spoke reaches only the hub, never another spoke.

A route deleted outside CloudFormation is not restored by redeploying an unchanged template
(CloudFormation does not compare live resources to the template unless asked for drift), so the fixes for
routes name the EC2 call that restores or removes exactly the one that differs.

Routes inside the CIDR of a spoke whose peering cannot be identified (its Network stack is in another
account and the hub side finds no single active peering from it) are not judged at all: calling them
leftovers would print a `delete-route` that cuts that spoke off.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hubspoke.cli.checks import Check, CheckResult, run_listed
from hubspoke.cli.verify.ingress import security_group_rows
from hubspoke.cli.verify.live import Context, Scope, Unavailable, checked
from hubspoke.cli.verify.peering import network_stack, peering_from_hub, peering_rows
from hubspoke.config import RegionConfig
from hubspoke.config.layout import route_table_az_ids
from hubspoke.outputs import PEERING_CONNECTION, PRIVATE_ROUTE_TABLE, VPC_ID

NETWORK: tuple[Check[Scope], ...] = (
    Check("vpc", "ec2", lambda s: True, lambda s: _vpc(s.ctx, s.region)),
    Check("peering", "ec2", lambda s: s.spoke, lambda s: peering_rows(s.ctx, s.region)),
    Check("routes", "ec2", lambda s: True, lambda s: _routes(s.ctx, s.region)),
    Check("security group", "ec2", lambda s: True, lambda s: security_group_rows(s.ctx, s.region)),
)


def network_rows(s: Scope) -> list[CheckResult]:
    return run_listed(NETWORK, s, partial(checked, s.code))


def _vpc(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    vpc_id = ctx.stacks.output(network_stack(code), VPC_ID.key())
    # EC2 DescribeVpcs, filter vpc-id (an ID filter answers an empty list where VpcIds would raise NotFound):
    # Vpcs[].CidrBlockAssociationSet[].CidrBlock and CidrBlockState.State.
    found = ctx.clients("ec2", code).describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"]
    vpcs = [v for v in found if v.get("VpcId") == vpc_id]  # the filter narrows; the ID decides
    if not vpcs:
        return [
            CheckResult(
                code,
                "vpc",
                "fail",
                f"VPC {vpc_id} (output {VPC_ID.key()} of {network_stack(code)}) does not exist",
                "the Network stack's VPC was deleted outside CloudFormation, which does not re-create it: "
                "delete and redeploy the Region's stacks (docs/runbooks/teardown.md keeps the data)",
            )
        ]
    live = {
        a["CidrBlock"]
        for a in vpcs[0].get("CidrBlockAssociationSet", [])
        if a.get("CidrBlockState", {}).get("State") == "associated"
    }
    wanted = set(region.all_cidrs)
    rows = []
    if wanted - live:
        rows.append(
            CheckResult(
                code,
                "vpc",
                "fail",
                f"{vpc_id} lacks configured CIDR(s) {', '.join(sorted(wanted - live))} "
                f"(associated: {', '.join(sorted(live)) or 'none'})",
                # A CIDR added to the config is created by the Network stack's next deploy; one disassociated
                # by hand is not re-created from an unchanged template (EC2 AssociateVpcCidrBlock restores it).
                f"a CIDR newly added to the config: {ctx.deploy_command(network_stack(code))}; one "
                "disassociated by hand (CloudFormation does not re-create it): "
                + "; ".join(
                    f"aws ec2 associate-vpc-cidr-block --vpc-id {vpc_id} --cidr-block {cidr} --region {code}"
                    for cidr in sorted(wanted - live)
                ),
            )
        )
    if live - wanted:
        rows.append(
            CheckResult(
                code,
                "vpc",
                "warn",
                f"{vpc_id} also carries {', '.join(sorted(live - wanted))}, which the config does not name: "
                "nothing routes it over the peering",
                "add it to secondary_cidrs, or disassociate it",
            )
        )
    return rows or [CheckResult(code, "vpc", "pass", f"{vpc_id} carries {', '.join(region.all_cidrs)}")]


@dataclass(frozen=True)
class _PeerRoute:
    """A CIDR the table must send over one peering, and who the peer is (for messages)."""

    cidr: str
    pcx_id: str
    peer: str
    found: str = ""  # how the peering was identified, when not from its Network stack


@dataclass
class _Expected:
    """What the Region's tables must route over the peerings, and the CIDRs left unjudged (with why)."""

    routes: list[_PeerRoute] = field(default_factory=list)
    rows: list[CheckResult] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)


def _expected_routes(ctx: Context, region: RegionConfig) -> _Expected:
    """The hub routes every spoke CIDR over that spoke's peering; a spoke routes the hub's over its own."""
    config = ctx.config
    if region.region != config.hub.region:
        pcx_id = ctx.stacks.output(network_stack(region.region), PEERING_CONNECTION.key())
        return _Expected([_PeerRoute(c, pcx_id, f"hub {config.hub.region}") for c in config.hub.all_cidrs])
    expected = _Expected()
    for spoke in config.spokes:
        try:
            pcx_id, found = ctx.stacks.output(network_stack(spoke.region), PEERING_CONNECTION.key()), ""
        except Unavailable as exc:
            from_hub, found = peering_from_hub(ctx, spoke)
            if from_hub is None:
                expected.unjudged += spoke.all_cidrs
                expected.rows.append(
                    CheckResult(
                        region.region,
                        "routes",
                        "not checked",
                        f"routes to spoke {spoke.region} ({', '.join(spoke.all_cidrs)}), none judged: {exc}, "
                        + found,
                        f"with credentials for account {config.account_of(spoke)}, the spoke's own run shows its "
                        f"peering: AWS_PROFILE=<profile> hubspoke verify --config {ctx.config_path} "
                        f"--region {spoke.region}",
                    )
                )
                continue
            pcx_id = from_hub
        expected.routes += [_PeerRoute(c, pcx_id, f"spoke {spoke.region}", found) for c in spoke.all_cidrs]
    return expected


def _routes(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    config = ctx.config
    tables = {
        ctx.stacks.output(network_stack(code), PRIVATE_ROUTE_TABLE.key(az)): az
        for az in route_table_az_ids(region)
    }
    plan = _expected_routes(ctx, region)
    expected, rows = plan.routes, plan.rows
    ours = {r.pcx_id for r in expected}
    # A spoke must reach no other spoke: every other spoke's CIDR is forbidden in its tables.
    forbidden = (
        []
        if code == config.hub.region
        else [(s.region, c) for s in config.spokes if s.region != code for c in s.all_cidrs]
    )
    # EC2 DescribeRouteTables, filter route-table-id: Routes[].DestinationCidrBlock, VpcPeeringConnectionId,
    # GatewayId, NatGatewayId, TransitGatewayId, ..., State active | blackhole | filtered.
    found = ctx.clients("ec2", code).describe_route_tables(
        Filters=[{"Name": "route-table-id", "Values": sorted(tables)}]
    )["RouteTables"]
    live = {t["RouteTableId"]: t.get("Routes", []) for t in found if t["RouteTableId"] in tables}
    for table_id, az in tables.items():
        if table_id not in live:
            rows.append(
                CheckResult(
                    code,
                    "routes",
                    "fail",
                    f"route table {table_id} ({az}) does not exist",
                    ctx.gone_fix(network_stack(code), table_id),
                )
            )
            continue
        rows += _table_rows(code, table_id, az, live[table_id], expected, ours, forbidden, plan.unjudged)
    return rows


def _table_rows(
    region: str,
    table_id: str,
    az: str,
    routes: list[dict[str, Any]],
    expected: list[_PeerRoute],
    ours: set[str],
    forbidden: list[tuple[str, str]],
    unjudged: list[str],
) -> list[CheckResult]:
    where = f"--route-table-id {table_id} --region {region}"
    by_destination = {r["DestinationCidrBlock"]: r for r in routes if "DestinationCidrBlock" in r}
    rows = []
    for want in expected:
        route = by_destination.get(want.cidr)
        target = _target(route) if route else ""
        restore = f"--destination-cidr-block {want.cidr} --vpc-peering-connection-id {want.pcx_id} {where}"
        if route is None:
            detail = f"{table_id} ({az}) has no route to {want.peer} {want.cidr}: that traffic is dropped"
            rows.append(CheckResult(region, "routes", "fail", detail, f"aws ec2 create-route {restore}"))
        elif route.get("VpcPeeringConnectionId") != want.pcx_id:
            detail = (
                f"{table_id} ({az}) sends {want.peer} {want.cidr} to {target}, not the peering {want.pcx_id}"
            )
            rows.append(CheckResult(region, "routes", "fail", detail, f"aws ec2 replace-route {restore}"))
        elif route.get("State") != "active":
            detail = f"{table_id} ({az}) route to {want.cidr} via {want.pcx_id} is {route.get('State')}"
            rows.append(
                CheckResult(region, "routes", "fail", detail, "see the peering row: the peering is gone")
            )
    wanted = {(w.cidr, w.pcx_id) for w in expected}
    for destination, route in by_destination.items():
        if any(_within(destination, c) for c in unjudged):
            continue  # towards a spoke whose peering is unknown here: said in its own row
        remove = f"aws ec2 delete-route --destination-cidr-block {destination} {where}"
        # Towards part or all of another spoke's CIDR; a wider route (0.0.0.0/0 to a NAT) is not one.
        spoke = next((s for s, c in forbidden if _within(destination, c)), None)
        if spoke is not None:
            detail = (
                f"{table_id} ({az}) routes {destination} (spoke {spoke}) via {_target(route)}: "
                "spokes never route to each other (peering is not transitive; hubspoke plans no such path)"
            )
            rows.append(CheckResult(region, "routes", "fail", detail, remove))
        elif (
            route.get("VpcPeeringConnectionId") in ours
            and (destination, route["VpcPeeringConnectionId"]) not in wanted
        ):
            detail = f"{table_id} ({az}) sends {destination} over {route['VpcPeeringConnectionId']}, not a peer CIDR"
            rows.append(CheckResult(region, "routes", "fail", detail, remove))
        elif destination in {w.cidr for w in expected}:
            continue  # judged above
        elif any(_within(destination, w.cidr) for w in expected):
            detail = (
                f"{table_id} ({az}) sends {destination}, part of a peer CIDR, to {_target(route)}: "
                "the longer prefix wins, so that part bypasses the peering"
            )
            rows.append(CheckResult(region, "routes", "fail", detail, remove))
        elif route.get("State") == "blackhole":
            detail = f"{table_id} ({az}) routes {destination} to {_target(route)}, which is gone (blackhole)"
            rows.append(
                CheckResult(region, "routes", "warn", detail, f"a leftover (a removed spoke?): {remove}")
            )
        elif route.get("VpcPeeringConnectionId"):
            detail = (
                f"{table_id} ({az}) routes {destination} over {route['VpcPeeringConnectionId']}, "
                "a peering this environment does not plan"
            )
            rows.append(CheckResult(region, "routes", "warn", detail, f"if it is a leftover: {remove}"))
    if any(r.status == "fail" for r in rows):
        return rows
    peers = (
        ", ".join(f"{w.cidr} via {w.pcx_id}" + (f" ({w.found})" if w.found else "") for w in expected)
        or "no peer CIDR"
    )
    return [
        *rows,
        CheckResult(region, "routes", "pass", f"{table_id} ({az}) routes {peers}; nothing between spokes"),
    ]


def _target(route: dict[str, Any]) -> str:
    # An IPv4 route's targets: CreateRoute's target parameters that DescribeRouteTables reports on the Route
    # (botocore ec2 service-2.json; EgressOnlyInternetGatewayId is for IPv6 traffic only).
    for key in (
        "VpcPeeringConnectionId",
        "TransitGatewayId",
        "NatGatewayId",
        "GatewayId",
        "NetworkInterfaceId",
        "InstanceId",
        "LocalGatewayId",
        "CarrierGatewayId",
        "CoreNetworkArn",
        "OdbNetworkArn",
    ):
        if route.get(key):
            return str(route[key])
    return "an unknown target"


def _within(a: str, b: str) -> bool:
    return ipaddress.IPv4Network(a).subnet_of(ipaddress.IPv4Network(b))
