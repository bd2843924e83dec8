"""Invariants over the synthesized Network, Link and PeerAccess templates (meaning, not snapshots), for every
topology shape (config/dev.yaml and tests/shapes.py: several spokes, secondary CIDRs, every NAT mode, a spoke
in another account). The cross-account roles themselves are judged in tests/stacks/test_cross_account.py."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from hubspoke.config.layout import route_table_az_ids
from hubspoke.topology import stack_name
from tests.conftest import Shape, Templates, properties

# What crosses the peering, written out from the sources rather than read from hubspoke.ports: Qumulo "Required
# networking ports" (portal TCP 3713 in both directions on every node) and EC2 User Guide "Path MTU Discovery"
# (ICMP type 3 code 4, fragmentation needed), plus what this project's spoke-side code calls on the hub: the
# canary's NFS probe (TCP 2049) and the provisioner's REST call (TCP 8000). As (IpProtocol, FromPort, ToPort):
# for ICMP, CloudFormation's FromPort is the type and ToPort the code.
PORTAL, PMTUD = ("tcp", 3713, 3713), ("icmp", 3, 4)
FROM_SPOKE_RULES = {("tcp", 2049, 2049), PORTAL, ("tcp", 8000, 8000), PMTUD}
FROM_HUB_RULES = {PORTAL, PMTUD}


def carried(config: Any, templates: Any, ref: dict[str, Any]) -> Any:
    """What a Fn::GetStackOutput reads: the Value of the output it names in the stack it names."""
    [producer] = [sid for sid in templates if stack_name(config, *sid.split("-", 1)) == ref["StackName"]]
    return templates[producer]["Outputs"][ref["OutputName"]]["Value"]


def test_one_peering_per_spoke_and_none_elsewhere(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    peerings = {sid: list(properties(t, "AWS::EC2::VPCPeeringConnection")) for sid, t in templates.items()}
    for spoke in config.spokes:
        [(_, props)] = peerings.pop(f"network-{spoke.region}")
        assert props["PeerRegion"] == config.hub.region
        peer_vpc = props["PeerVpcId"]["Fn::GetStackOutput"]
        assert peer_vpc["StackName"] == stack_name(config, "network", config.hub.region)
        # The same value as the hub's VpcId output (the CLI's): the VPC's Ref, read in the hub's Region.
        assert peer_vpc["Region"] == config.hub.region
        hub_outputs = templates[f"network-{config.hub.region}"]["Outputs"]
        assert carried(config, templates, peer_vpc) == hub_outputs["VpcId"]["Value"]
        # AWS::EC2::VPCPeeringConnection: PeerOwnerId and PeerRoleArn only for a VPC in another account;
        # a same-account inter-Region peering is accepted automatically.
        other_account = config.account_of(spoke) != config.account_of(config.hub)
        assert ("PeerRoleArn" in props) is other_account, spoke.region
        assert props.get("PeerOwnerId", config.account_of(config.hub)) == config.account_of(config.hub)
    assert all(not found for found in peerings.values())


def test_spoke_routes_every_hub_cidr_in_every_private_table(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for spoke in config.spokes:
        t = templates[f"network-{spoke.region}"]
        private = {v["Value"]["Ref"] for k, v in t["Outputs"].items() if k.startswith("PrivateRouteTable")}
        assert len(private) == len(route_table_az_ids(spoke))
        routed = [
            (p["RouteTableId"]["Ref"], p["DestinationCidrBlock"])
            for _, p in properties(t, "AWS::EC2::Route")
            if "VpcPeeringConnectionId" in p
        ]
        # Every hub CIDR, secondary ones included, and nothing else (no spoke-to-spoke: peering is not transitive).
        assert sorted(routed) == sorted((rt, c) for rt in private for c in config.hub.all_cidrs)


def test_hub_routes_live_in_link_stack(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    hub = templates[f"network-{config.hub.region}"]
    assert not list(properties(hub, "AWS::EC2::VPCPeeringConnection"))
    assert not any("VpcPeeringConnectionId" in p for _, p in properties(hub, "AWS::EC2::Route"))
    hub_tables = {v["Value"]["Ref"] for k, v in hub["Outputs"].items() if k.startswith("PrivateRouteTable")}
    for spoke in config.spokes:
        link = templates[f"link-{spoke.region}"]
        routes = [p for _, p in properties(link, "AWS::EC2::Route")]
        pairs = [
            (
                carried(config, templates, r["RouteTableId"]["Fn::GetStackOutput"])["Ref"],
                r["DestinationCidrBlock"],
            )
            for r in routes
        ]
        assert sorted(pairs) == sorted((t, c) for t in hub_tables for c in spoke.all_cidrs)
        for r in routes:
            ref = r["VpcPeeringConnectionId"]["Fn::GetStackOutput"]
            assert (ref["StackName"], ref["Region"]) == (
                stack_name(config, "network", spoke.region),
                spoke.region,
            )
            spoke_outputs = templates[f"network-{spoke.region}"]["Outputs"]
            assert carried(config, templates, ref) == spoke_outputs["PeeringConnectionId"]["Value"]


def _ingress(templates: Templates) -> Iterator[tuple[str, dict[str, Any]]]:
    for sid, t in templates.items():
        for _, p in properties(t, "AWS::EC2::SecurityGroupIngress"):
            yield sid, p
        for _, p in properties(t, "AWS::EC2::SecurityGroup"):
            for rule in p.get("SecurityGroupIngress", []):
                yield sid, rule


def test_cross_region_ingress_only_from_peer_cidrs_on_needed_ports(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for spoke in config.spokes:
        for sid, peer_cidrs, wanted in (
            (f"network-{spoke.region}", config.hub.all_cidrs, FROM_HUB_RULES),
            (f"link-{spoke.region}", spoke.all_cidrs, FROM_SPOKE_RULES),
        ):
            rules = [r for s, r in _ingress(templates) if s == sid]
            assert {r["CidrIp"] for r in rules} == set(peer_cidrs)
            for cidr in peer_cidrs:
                got = {(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in rules if r["CidrIp"] == cidr}
                assert got == wanted, (sid, cidr)
    for _, rule in _ingress(templates):
        assert rule.get("CidrIp") != "0.0.0.0/0" and rule.get("CidrIpv6") != "::/0"


def test_every_port_open_on_the_hub_from_a_spoke_is_one_the_spoke_uses(shape: Shape) -> None:
    """No rule without a user: each TCP port the hub admits from a spoke is one a spoke-side security group sends
    to the hub on (canary, provisioner), or the portal; each rule costs quota (60 rules per group by default).
    Judged for spokes with storage, where those senders live: a network-only spoke is admitted the same ports
    today with nothing on it that sends them (noted in issue 11's note, left as is)."""
    config, templates = shape.config, shape.templates
    hub_cidrs = set(config.hub.all_cidrs)
    for spoke in (s for s in config.spokes if s.storage.enabled):
        egress_to_hub = {
            ("tcp", r["FromPort"], r["ToPort"])
            for sid in (f"ops-{spoke.region}", f"storage-{spoke.region}")
            if sid in templates
            for _, sg in properties(templates[sid], "AWS::EC2::SecurityGroup")
            for r in sg.get("SecurityGroupEgress", [])
            if r.get("CidrIp") in hub_cidrs and r.get("IpProtocol") == "tcp"
        }
        used = egress_to_hub | {PORTAL, PMTUD}
        admitted = {
            (r["IpProtocol"], r["FromPort"], r["ToPort"])
            for s, r in _ingress(templates)
            if s == f"link-{spoke.region}"
        }
        assert admitted <= used, f"rules nobody uses: {sorted(admitted - used)}"


def test_vpcs_and_their_secondary_blocks_match_config_and_do_not_overlap(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for region in config.regions():
        t = templates[f"network-{region.region}"]
        [(vpc_id, vpc)] = properties(t, "AWS::EC2::VPC")
        assert vpc["CidrBlock"] == region.cidr
        blocks = [p for _, p in properties(t, "AWS::EC2::VPCCidrBlock")]
        assert sorted(b["CidrBlock"] for b in blocks) == sorted(region.secondary_cidrs)
        assert all(b["VpcId"] == {"Ref": vpc_id} for b in blocks)
    nets = [
        ipaddress.IPv4Network(p["CidrBlock"])
        for t in templates.values()
        for kind in ("AWS::EC2::VPC", "AWS::EC2::VPCCidrBlock")
        for _, p in properties(t, kind)
    ]
    assert len(nets) == sum(len(r.all_cidrs) for r in config.regions())
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_each_region_network_basics(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for region in config.regions():
        t = templates[f"network-{region.region}"]
        subnets = [p for _, p in properties(t, "AWS::EC2::Subnet")]
        assert all("AvailabilityZone" not in s and s["AvailabilityZoneId"] for s in subnets)
        accel = [s for s in subnets if {"Key": "hubspoke:subnet", "Value": "accelerator"} in s["Tags"]]
        assert [s["AvailabilityZoneId"] for s in accel] == [region.resolved_accelerator_az_id]
        [(_, endpoint)] = properties(t, "AWS::EC2::VPCEndpoint")
        assert endpoint["ServiceName"] == f"com.amazonaws.{region.region}.s3"
        assert endpoint["VpcEndpointType"] == "Gateway"
        [(_, flow)] = properties(t, "AWS::EC2::FlowLog")
        assert flow["TrafficType"] == "ALL"
        # 1-minute records (60 s; the default is 600): AWS::EC2::FlowLog MaxAggregationInterval, VPC User Guide.
        assert flow["MaxAggregationInterval"] == 60
        [(group_id, _)] = properties(t, "AWS::Logs::LogGroup")
        assert t["Resources"][group_id]["DeletionPolicy"] == "Retain"


def test_nat_follows_the_regions_mode(shape: Shape) -> None:
    """README `.nat`: `single` is one NAT gateway, `per_az` one in each of the Region's AZ IDs (a NAT gateway
    serves one AZ: VPC User Guide, "NAT gateways"), `none` no egress to the internet at all."""
    config, templates = shape.config, shape.templates
    for region in config.regions():
        t = templates[f"network-{region.region}"]
        nats = [p for _, p in properties(t, "AWS::EC2::NatGateway")]
        expected = {"single": 1, "per_az": len(region.resolved_az_ids), "none": 0}[region.nat]
        assert len(nats) == expected, (region.region, region.nat)
        defaults = [
            p for _, p in properties(t, "AWS::EC2::Route") if p.get("DestinationCidrBlock") == "0.0.0.0/0"
        ]
        tables = route_table_az_ids(region)
        if region.nat == "none":
            assert not list(properties(t, "AWS::EC2::InternetGateway")) and not defaults, region.region
            continue
        private = {p["RouteTableId"]["Ref"] for p in defaults if "NatGatewayId" in p}
        assert len(private) == len(tables), "every private route table has its default route through a NAT"
        if region.nat == "per_az":  # each AZ's table through that AZ's own NAT gateway
            used = {str(p["NatGatewayId"]) for p in defaults if "NatGatewayId" in p}
            assert len(used) == expected
