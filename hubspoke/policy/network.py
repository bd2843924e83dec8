"""Our rules on the cross-Region network: who may reach a VPC, peerings routed on both sides, no transitive route.

Facts they rest on (Amazon VPC Peering Guide): peering is not transitive, each side needs its own routes to the
peer's CIDRs, and security groups cannot be referenced across Regions, so ingress names the peer's CIDR.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.outputs import PEERING_CONNECTION, PRIVATE_ROUTE_TABLE
from hubspoke.policy.model import PolicyRule, Template, Violation, ingress
from hubspoke.topology import stack_name


def no_ingress_from_world(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoWorldIngress: nothing we deploy is reachable from the whole internet."""
    for t in templates:
        for logical_id, rule in ingress(t):
            if rule.get("CidrIp") == "0.0.0.0/0" or rule.get("CidrIpv6") == "::/0":
                yield Violation(
                    "HubSpoke-NoWorldIngress",
                    t.path,
                    logical_id,
                    "security group ingress from 0.0.0.0/0 or ::/0",
                    "allow the peer VPC CIDR or the configured admin CIDR instead",
                )


def ingress_only_from_known_cidrs(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-PeerCidrIngress: ingress from outside a VPC comes only from its configured peers (or admin CIDR)."""
    for t in templates:
        region_code = t.meta.get("region")
        if region_code is None:
            continue
        region = config.region_config(region_code)
        own = [ipaddress.IPv4Network(c) for c in region.all_cidrs]
        allowed = set(config.peer_cidrs(region)) | set(region.compute.public_access_cidrs)
        if region.storage.admin_cidr:
            allowed.add(region.storage.admin_cidr)
        if t.meta.get("spoke"):  # a Link stack speaks for one spoke only
            allowed = set(config.spoke(t.meta["spoke"]).all_cidrs)
        for logical_id, rule in ingress(t):
            cidr = rule.get("CidrIp")
            if not isinstance(cidr, str):
                continue
            net = ipaddress.IPv4Network(cidr, strict=False)
            if any(net.subnet_of(o) for o in own) or cidr in allowed:
                continue
            yield Violation(
                "HubSpoke-PeerCidrIngress",
                t.path,
                logical_id,
                f"ingress from {cidr}, which is neither this VPC nor a configured peer of {region_code}",
                f"allow only {', '.join(sorted(allowed)) or 'the VPC itself'}",
            )


def peerings_routed_on_both_sides(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-PeeringRouted: every peering has routes to the peer's CIDRs in every private route table, both sides."""
    by_kind = {(t.meta.get("kind"), t.meta.get("region"), t.meta.get("spoke")): t for t in templates}
    hub = config.hub
    hub_network = stack_name(config, "network", hub.region)
    hub_tables = {PRIVATE_ROUTE_TABLE.key(az) for az in route_table_az_ids(hub)}
    for spoke in config.spokes:
        net = by_kind.get(("network", spoke.region, None))
        link = by_kind.get(("link", hub.region, spoke.region))
        spoke_network = stack_name(config, "network", spoke.region)
        if net is None:
            yield Violation(
                "HubSpoke-PeeringRouted",
                spoke_network,
                spoke_network,
                f"no Network template for spoke {spoke.region}: its peering cannot be checked",
                "synthesize every stack of the environment before checking policy",
            )
            continue
        outputs = net.body.get("Outputs", {})
        tables = {_ref(outputs[k].get("Value")) for k in outputs if k.startswith(PRIVATE_ROUTE_TABLE.name)}
        for logical_id, _ in net.resources("AWS::EC2::VPCPeeringConnection"):
            want = {(table, cidr) for table in tables for cidr in hub.all_cidrs}
            have = {
                (_ref(r.get("RouteTableId")), r.get("DestinationCidrBlock"))
                for _, r in net.resources("AWS::EC2::Route")
                if _ref(r.get("VpcPeeringConnectionId")) == logical_id
            }
            if missing := want - have:
                yield Violation(
                    "HubSpoke-PeeringRouted",
                    net.path,
                    logical_id,
                    f"spoke side lacks {len(missing)} route(s) to the hub over this peering",
                    "route every hub CIDR in every private route table of the spoke via the peering",
                )
        if link is None:
            yield Violation(
                "HubSpoke-PeeringRouted",
                net.path,
                spoke_network,
                f"no Link template for spoke {spoke.region}: the hub has no routes back over its peering",
                f"deploy the Link stack for {spoke.region} with a route per hub private route table",
            )
            continue
        # The Link stack reads the hub's route tables and the spoke's peering by weak reference: both the
        # output and the stack it comes from must be the right ones.
        want = {(table, cidr) for table in hub_tables for cidr in spoke.all_cidrs}
        have = {
            (_output_of(r.get("RouteTableId"), hub_network), r.get("DestinationCidrBlock"))
            for _, r in link.resources("AWS::EC2::Route")
            if _output_of(r.get("VpcPeeringConnectionId"), spoke_network) == PEERING_CONNECTION.key()
        }
        if missing := want - have:
            yield Violation(
                "HubSpoke-PeeringRouted",
                link.path,
                spoke_network,
                f"hub side lacks {len(missing)} route(s) to spoke {spoke.region} over its peering",
                f"route every CIDR of {spoke.region} in every hub private route table "
                f"({', '.join(sorted(hub_tables))} of {hub_network}) via {PEERING_CONNECTION.key()} of {spoke_network}",
            )


def no_route_between_spokes(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoTransitiveRoute: peering is not transitive, so a spoke never routes to another spoke."""
    for t in templates:
        if t.meta.get("kind") != "network" or t.meta.get("region") == config.hub.region:
            continue
        others = {c for s in config.spokes if s.region != t.meta.get("region") for c in s.all_cidrs}
        for logical_id, route in t.resources("AWS::EC2::Route"):
            if route.get("DestinationCidrBlock") in others:
                yield Violation(
                    "HubSpoke-NoTransitiveRoute",
                    t.path,
                    logical_id,
                    f"route to another spoke's CIDR {route['DestinationCidrBlock']}",
                    "remove it: spoke-to-spoke traffic cannot cross the hub's peerings",
                )


def _ref(value: Any) -> Any:
    return value.get("Ref") if isinstance(value, Mapping) else value


def _output_of(value: Any, stack: str) -> Any:
    """The output name a Fn::GetStackOutput reads, if it reads stack `stack` (else None)."""
    if isinstance(value, Mapping) and "Fn::GetStackOutput" in value:
        ref = value["Fn::GetStackOutput"]
        if ref.get("StackName") == stack:
            return ref.get("OutputName")
    return None


NETWORK_RULES: tuple[PolicyRule, ...] = (
    no_ingress_from_world,
    ingress_only_from_known_cidrs,
    peerings_routed_on_both_sides,
    no_route_between_spokes,
)
