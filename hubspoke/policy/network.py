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
from hubspoke.outputs import PRIVATE_ROUTE_TABLE
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
        # The Link stack reads the hub's route tables and the spoke's peering by weak reference: each must
        # name an output of the right stack, read in the right Region, whose value is the right resource.
        hub_net = by_kind.get(("network", hub.region, None))
        hub_outputs = hub_net.body.get("Outputs", {}) if hub_net else {}
        hub_table_ids = {_ref(hub_outputs[k].get("Value")) for k in hub_tables if k in hub_outputs}
        peerings = {logical_id for logical_id, _ in net.resources("AWS::EC2::VPCPeeringConnection")}
        want = {(table, cidr) for table in hub_table_ids or hub_tables for cidr in spoke.all_cidrs}
        have = {
            (
                _read(r.get("RouteTableId"), hub_net, hub_network, hub.region, hub.region),
                r.get("DestinationCidrBlock"),
            )
            for _, r in link.resources("AWS::EC2::Route")
            if _read(r.get("VpcPeeringConnectionId"), net, spoke_network, spoke.region, hub.region)
            in peerings
        }
        if missing := want - have:
            yield Violation(
                "HubSpoke-PeeringRouted",
                link.path,
                spoke_network,
                f"hub side lacks {len(missing)} route(s) to spoke {spoke.region} over its peering",
                f"route every CIDR of {spoke.region} in every hub private route table "
                f"({', '.join(sorted(hub_tables))} of {hub_network}) via the peering of {spoke_network} "
                f"read in {spoke.region}",
            )


def no_route_between_spokes(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoTransitiveRoute: a spoke routes over its peering only to the hub's CIDRs, never toward a spoke.

    Transitive peering is not supported (Amazon VPC Peering Guide, "VPC peering limitations"), so any other
    peering route is a dead end, and one covering a spoke (a supernet) a spoke-to-spoke route in disguise;
    CIDRs are compared as networks.
    """
    # Collapsed, so a route to adjacent hub CIDRs at once (10.10.0.0/15 over 10.10/16 and 10.11/16) is the hub's.
    hub = list(ipaddress.collapse_addresses(ipaddress.IPv4Network(c) for c in config.hub.all_cidrs))
    for t in templates:
        region = t.meta.get("region")
        if t.meta.get("kind") != "network" or region == config.hub.region:
            continue
        others = [ipaddress.IPv4Network(c) for s in config.spokes if s.region != region for c in s.all_cidrs]
        for logical_id, route in t.resources("AWS::EC2::Route"):
            dest = route.get("DestinationCidrBlock", route.get("DestinationIpv6CidrBlock"))
            over_peering = "VpcPeeringConnectionId" in route
            if not isinstance(dest, str):
                if over_peering:  # a token cannot be compared: refuse rather than pass it unchecked
                    yield Violation(
                        "HubSpoke-NoTransitiveRoute",
                        t.path,
                        logical_id,
                        f"route over a peering to a destination that is not a literal CIDR ({dest!r})",
                        "route the hub's CIDRs literally, as config gives them",
                    )
                continue
            net = ipaddress.ip_network(dest, strict=False)
            covered = [str(o) for o in others if _overlaps(net, o)]
            if over_peering and not any(_within(net, h) for h in hub):
                yield Violation(
                    "HubSpoke-NoTransitiveRoute",
                    t.path,
                    logical_id,
                    f"route over the peering to {dest}, outside the hub's CIDRs {', '.join(config.hub.all_cidrs)}"
                    + (f" and covering another spoke's CIDR {', '.join(covered)}" if covered else ""),
                    "route over the peering only the hub's CIDRs: the hub forwards nothing onward",
                )
            elif any(
                _within(net, o) for o in others
            ):  # a more specific route into a spoke, whatever its target
                yield Violation(
                    "HubSpoke-NoTransitiveRoute",
                    t.path,
                    logical_id,
                    f"route to {dest}, within another spoke's CIDR {', '.join(covered)}",
                    "remove it: spoke-to-spoke traffic cannot cross the hub's peerings",
                )


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _within(net: Network, other: Network) -> bool:
    return net.version == other.version and net.subnet_of(other)  # type: ignore[arg-type]


def _overlaps(net: Network, other: Network) -> bool:
    return net.version == other.version and net.overlaps(other)


def _ref(value: Any) -> Any:
    return value.get("Ref") if isinstance(value, Mapping) else value


def _read(value: Any, producer: Template | None, stack: str, region: str, home: str) -> Any:
    """The logical ID a Fn::GetStackOutput of `producer`'s output refers to, if it reads stack `stack` in `region`."""
    name = _output_of(value, stack, region, home)
    if producer is None or name is None:
        return None
    return _ref(producer.body.get("Outputs", {}).get(name, {}).get("Value"))


def _output_of(value: Any, stack: str, region: str, home: str) -> Any:
    """The output name a Fn::GetStackOutput reads, if it reads stack `stack` in `region` (else None).

    `home` is the Region of the template holding the reference: the Fn::GetStackOutput docs
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-getstackoutput.html)
    say Region defaults to the Region of the stack being created or updated, and a stack name is unique only
    within one account and Region, so the same name read in another Region is another stack.
    """
    if isinstance(value, Mapping) and "Fn::GetStackOutput" in value:
        ref = value["Fn::GetStackOutput"]
        if ref.get("StackName") == stack and ref.get("Region", home) == region:
            return ref.get("OutputName")
    return None


NETWORK_RULES: tuple[PolicyRule, ...] = (
    no_ingress_from_world,
    ingress_only_from_known_cidrs,
    peerings_routed_on_both_sides,
    no_route_between_spokes,
)
