"""Verify's network checks: the VPC's CIDRs, each spoke's peering, the peering routes (ingress: ingress.py).

IDs come from the Network stacks' outputs (hubspoke/outputs.py); what each resource must look like comes
from config: the peer CIDRs (HubSpokeConfig.peer_cidrs) and the route tables (layout.route_table_az_ids),
exactly what the Network and Link stacks create (constructs/peering.py, PeerSide). Peering is not
transitive (VPC peering guide): a spoke reaches only the hub, never another spoke.

A route deleted outside CloudFormation is not restored by redeploying an unchanged template
(CloudFormation does not compare live resources to the template unless asked for drift), so the fixes for
routes name the EC2 call that restores or removes exactly the one that differs.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify.ingress import security_group_rows
from hubspoke.cli.verify.live import Context, Unavailable, checked
from hubspoke.config import RegionConfig
from hubspoke.config.layout import route_table_az_ids
from hubspoke.outputs import PEERING_CONNECTION, PRIVATE_ROUTE_TABLE, VPC_ID
from hubspoke.topology import stack_id


def network_rows(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    rows = checked(code, "vpc", "ec2", lambda: _vpc(ctx, region))
    if region.region != ctx.config.hub.region:
        rows += checked(code, "peering", "ec2", lambda: _peering(ctx, region))
    rows += checked(code, "routes", "ec2", lambda: _routes(ctx, region))
    rows += checked(code, "security group", "ec2", lambda: security_group_rows(ctx, region))
    return rows


def network_stack(region: str) -> str:
    return stack_id("network", region)


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
                "the Network stack's VPC was deleted outside CloudFormation: restore it from the stack "
                "(delete and redeploy the Region's stacks) after saving any data",
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
                ctx.deploy_command(network_stack(code)),
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


def _peering(ctx: Context, spoke: RegionConfig) -> list[CheckResult]:
    config = ctx.config
    code, hub = spoke.region, config.hub.region
    pcx_id = ctx.stacks.output(network_stack(code), PEERING_CONNECTION.key())
    spoke_vpc = ctx.stacks.output(network_stack(code), VPC_ID.key())
    hub_vpc = ctx.stacks.output(network_stack(hub), VPC_ID.key())
    # EC2 DescribeVpcPeeringConnections, filter vpc-peering-connection-id: Status.Code is one of
    # initiating-request, pending-acceptance, active, deleted, rejected, failed, expired, provisioning,
    # deleting (botocore ec2 service-2.json).
    # The filter narrows; the ID decides (moto 5.2.5 ignores this filter and lists every peering).
    found = [
        p
        for p in ctx.clients("ec2", code).describe_vpc_peering_connections(
            Filters=[{"Name": "vpc-peering-connection-id", "Values": [pcx_id]}]
        )["VpcPeeringConnections"]
        if p.get("VpcPeeringConnectionId") == pcx_id
    ]
    redeploy = f"{ctx.deploy_command(network_stack(code))}, then {ctx.deploy_command(stack_id('link', code))}"
    if not found:
        return [CheckResult(code, "peering", "fail", f"{pcx_id} does not exist", redeploy)]
    pcx = found[0]
    requester, accepter = pcx.get("RequesterVpcInfo", {}), pcx.get("AccepterVpcInfo", {})
    wanted = {
        "requester": (spoke_vpc, code, config.account_of(spoke)),
        "accepter": (hub_vpc, hub, config.account_of(config.hub)),
    }
    live = {
        "requester": (requester.get("VpcId"), requester.get("Region"), requester.get("OwnerId")),
        "accepter": (accepter.get("VpcId"), accepter.get("Region"), accepter.get("OwnerId")),
    }
    rows = []
    for side in ("requester", "accepter"):
        if live[side] != wanted[side]:
            rows.append(
                CheckResult(
                    code,
                    "peering",
                    "fail",
                    f"{pcx_id} {side} is VPC {live[side][0]} in {live[side][1]} (account {live[side][2]}); "
                    f"expected {wanted[side][0]} in {wanted[side][1]} (account {wanted[side][2]})",
                    redeploy,
                )
            )
    state = pcx.get("Status", {})
    if state.get("Code") != "active":
        if state.get("Code") == "pending-acceptance":
            fix = (
                "accept it in the hub Region: aws ec2 accept-vpc-peering-connection "
                f"--vpc-peering-connection-id {pcx_id} --region {hub}"
            )
        elif state.get("Code") in ("initiating-request", "provisioning"):
            fix = "the peering is still being set up: run hubspoke verify again in a minute"
        else:
            fix = redeploy
        message = f" ({state['Message']})" if state.get("Message") else ""
        rows.append(
            CheckResult(code, "peering", "fail", f"{pcx_id} is {state.get('Code')}{message}, not active", fix)
        )
    return rows or [
        CheckResult(
            code, "peering", "pass", f"{pcx_id} active between {spoke_vpc} ({code}) and {hub_vpc} ({hub})"
        )
    ]


@dataclass(frozen=True)
class _PeerRoute:
    """A CIDR the table must send over one peering, and who the peer is (for messages)."""

    cidr: str
    pcx_id: str
    peer: str


def _expected_routes(ctx: Context, region: RegionConfig) -> tuple[list[_PeerRoute], list[CheckResult]]:
    """The hub routes every spoke CIDR over that spoke's peering; a spoke routes the hub's over its own."""
    config = ctx.config
    if region.region != config.hub.region:
        pcx_id = ctx.stacks.output(network_stack(region.region), PEERING_CONNECTION.key())
        return [_PeerRoute(c, pcx_id, f"hub {config.hub.region}") for c in config.hub.all_cidrs], []
    routes, unseen = [], []
    for spoke in config.spokes:
        try:
            pcx_id = ctx.stacks.output(network_stack(spoke.region), PEERING_CONNECTION.key())
        except Unavailable as exc:
            unseen.append(
                CheckResult(region.region, "routes", "not checked", f"routes to spoke {spoke.region}: {exc}")
            )
            continue
        routes += [_PeerRoute(c, pcx_id, f"spoke {spoke.region}") for c in spoke.all_cidrs]
    return routes, unseen


def _routes(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    config = ctx.config
    tables = {
        ctx.stacks.output(network_stack(code), PRIVATE_ROUTE_TABLE.key(az)): az
        for az in route_table_az_ids(region)
    }
    expected, rows = _expected_routes(ctx, region)
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
                    ctx.deploy_command(network_stack(code)),
                )
            )
            continue
        rows += _table_rows(code, table_id, az, live[table_id], expected, ours, forbidden)
    return rows


def _table_rows(
    region: str,
    table_id: str,
    az: str,
    routes: list[dict[str, Any]],
    expected: list[_PeerRoute],
    ours: set[str],
    forbidden: list[tuple[str, str]],
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
    peers = ", ".join(f"{w.cidr} via {w.pcx_id}" for w in expected) or "no peer CIDR"
    return [
        *rows,
        CheckResult(region, "routes", "pass", f"{table_id} ({az}) routes {peers}; nothing between spokes"),
    ]


def _target(route: dict[str, Any]) -> str:
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
    ):
        if route.get(key):
            return str(route[key])
    return "an unknown target"


def _within(a: str, b: str) -> bool:
    return ipaddress.IPv4Network(a).subnet_of(ipaddress.IPv4Network(b))
