"""Invariants over the synthesized Network, Link and PeerAccess templates (meaning, not snapshots)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from hubspoke.config import HubSpokeConfig
from hubspoke.config.layout import route_table_az_ids
from tests.conftest import NETWORK_ONLY, Templates, properties, synth


def test_one_peering_per_spoke_and_none_elsewhere(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    peerings = {
        sid: list(properties(t, "AWS::EC2::VPCPeeringConnection")) for sid, t in dev_templates.items()
    }
    for spoke in dev_config.spokes:
        [(_, props)] = peerings.pop(f"network-{spoke.region}")
        assert props["PeerRegion"] == dev_config.hub.region
        assert props["PeerVpcId"]["Fn::GetStackOutput"]["StackName"] == "hubspoke-dev-network-us-east-2"
        assert props["PeerVpcId"]["Fn::GetStackOutput"]["Region"] == dev_config.hub.region
        assert "PeerRoleArn" not in props  # same account: accepted automatically
    assert all(not found for found in peerings.values())


def test_spoke_routes_every_hub_cidr_in_every_private_table(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    for spoke in dev_config.spokes:
        t = dev_templates[f"network-{spoke.region}"]
        private = {v["Value"]["Ref"] for k, v in t["Outputs"].items() if k.startswith("PrivateRouteTable")}
        assert len(private) == len(route_table_az_ids(spoke))
        routed = {
            (p["RouteTableId"]["Ref"], p["DestinationCidrBlock"])
            for _, p in properties(t, "AWS::EC2::Route")
            if "VpcPeeringConnectionId" in p
        }
        assert routed == {(rt, c) for rt in private for c in dev_config.hub.all_cidrs}


def test_hub_routes_live_in_link_stack(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    hub = dev_templates[f"network-{dev_config.hub.region}"]
    assert not list(properties(hub, "AWS::EC2::VPCPeeringConnection"))
    assert not any("VpcPeeringConnectionId" in p for _, p in properties(hub, "AWS::EC2::Route"))
    for spoke in dev_config.spokes:
        link = dev_templates[f"link-{spoke.region}"]
        routes = [p for _, p in properties(link, "AWS::EC2::Route")]
        tables = {r["RouteTableId"]["Fn::GetStackOutput"]["OutputName"] for r in routes}
        hub_tables = {k for k in hub["Outputs"] if k.startswith("PrivateRouteTable")}
        assert tables == hub_tables
        assert {r["DestinationCidrBlock"] for r in routes} == set(spoke.all_cidrs)
        for r in routes:
            ref = r["VpcPeeringConnectionId"]["Fn::GetStackOutput"]
            assert ref == {
                "StackName": f"hubspoke-dev-network-{spoke.region}",
                "Region": spoke.region,
                "OutputName": "PeeringConnectionId",
            }


def _ingress(templates: Templates) -> Iterator[tuple[str, dict[str, Any]]]:
    for sid, t in templates.items():
        for _, p in properties(t, "AWS::EC2::SecurityGroupIngress"):
            yield sid, p
        for _, p in properties(t, "AWS::EC2::SecurityGroup"):
            for rule in p.get("SecurityGroupIngress", []):
                yield sid, rule


# What crosses the peering (Qumulo "Required networking ports": portal TCP 3713 in both directions on every node;
# EC2 User Guide "Path MTU Discovery": ICMP type 3 code 4), plus what this project's spoke-side code calls on
# the hub: the canary's NFS probe (TCP 2049) and the provisioner's REST call (TCP 8000).
PORTAL, PMTUD = ("tcp", 3713, 3713), ("icmp", 3, 4)
FROM_SPOKE_RULES = {("tcp", 2049, 2049), PORTAL, ("tcp", 8000, 8000), PMTUD}
FROM_HUB_RULES = {PORTAL, PMTUD}


def test_cross_region_ingress_only_from_peer_cidrs_on_needed_ports(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    for spoke in dev_config.spokes:
        for sid, peer_cidrs, wanted in (
            (f"network-{spoke.region}", dev_config.hub.all_cidrs, FROM_HUB_RULES),
            (f"link-{spoke.region}", spoke.all_cidrs, FROM_SPOKE_RULES),
        ):
            rules = [r for s, r in _ingress(dev_templates) if s == sid]
            assert {r["CidrIp"] for r in rules} == set(peer_cidrs)
            for cidr in peer_cidrs:
                got = {(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in rules if r["CidrIp"] == cidr}
                assert got == wanted
    for _, rule in _ingress(dev_templates):
        assert rule.get("CidrIp") != "0.0.0.0/0" and rule.get("CidrIpv6") != "::/0"


def test_every_port_open_on_the_hub_from_a_spoke_is_one_the_spoke_uses(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """No rule without a user: each TCP port the hub admits from a spoke is one a spoke-side security group sends
    to the hub on (canary, provisioner), or the portal; each rule costs quota (60 rules per group by default)."""
    hub_cidrs = set(dev_config.hub.all_cidrs)
    for spoke in dev_config.spokes:
        egress_to_hub = {
            ("tcp", r["FromPort"], r["ToPort"])
            for sid in (f"ops-{spoke.region}", f"storage-{spoke.region}")
            for _, sg in properties(dev_templates[sid], "AWS::EC2::SecurityGroup")
            for r in sg.get("SecurityGroupEgress", [])
            if r.get("CidrIp") in hub_cidrs and r.get("IpProtocol") == "tcp"
        }
        used = egress_to_hub | {PORTAL, PMTUD}
        admitted = {
            (r["IpProtocol"], r["FromPort"], r["ToPort"])
            for s, r in _ingress(dev_templates)
            if s == f"link-{spoke.region}"
        }
        assert admitted <= used, f"rules nobody uses: {sorted(admitted - used)}"


def test_vpcs_do_not_overlap_and_match_config(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    vpcs = [p["CidrBlock"] for t in dev_templates.values() for _, p in properties(t, "AWS::EC2::VPC")]
    assert sorted(vpcs) == sorted(r.cidr for r in dev_config.regions())
    nets = [ipaddress.IPv4Network(c) for c in vpcs]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_each_region_network_basics(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    for region in dev_config.regions():
        t = dev_templates[f"network-{region.region}"]
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
        assert len(list(properties(t, "AWS::EC2::NatGateway"))) == 1  # nat: single by default


def test_nat_modes(config_from: Any) -> None:
    data = {
        "environment": "natmodes",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16", "nat": "per_az"},
        # No egress leaves no room for CNQ (it must reach Qumulo's endpoints): a network-only spoke.
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16", "nat": "none", **NETWORK_ONLY}],
    }
    templates = synth(config_from(data))
    assert len(list(properties(templates["network-us-east-2"], "AWS::EC2::NatGateway"))) == 2
    spoke = templates["network-us-west-2"]
    assert not list(properties(spoke, "AWS::EC2::NatGateway"))
    assert not list(properties(spoke, "AWS::EC2::InternetGateway"))
    assert not any(
        p.get("DestinationCidrBlock") == "0.0.0.0/0" for _, p in properties(spoke, "AWS::EC2::Route")
    )


def test_cross_account_spoke_uses_hub_created_peer_role(config_from: Any) -> None:
    data = {
        "environment": "xacct",
        "account": "111111111111",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [
            {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": "222222222222", **NETWORK_ONLY}
        ],
    }
    templates = synth(config_from(data))
    [(_, role)] = properties(templates["peer-access-us-west-2"], "AWS::IAM::Role")
    assert role["RoleName"] == "hubspoke-xacct-peer-us-west-2"
    principal = role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["AWS"]
    assert "222222222222" in str(principal)
    [(_, peering)] = properties(templates["network-us-west-2"], "AWS::EC2::VPCPeeringConnection")
    assert peering["PeerOwnerId"] == "111111111111"
    assert "role/hubspoke-xacct-peer-us-west-2" in str(peering["PeerRoleArn"])
    assert "role/hubspoke-xacct-peer-us-west-2" in str(peering["PeerVpcId"]["Fn::GetStackOutput"]["RoleArn"])
    link_route = next(p for _, p in properties(templates["link-us-west-2"], "AWS::EC2::Route"))
    assert "role/hubspoke-xacct-link-reader-us-west-2" in str(link_route["VpcPeeringConnectionId"])
