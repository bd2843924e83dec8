"""One side of a hub-spoke peering: routes to the peer's CIDRs and ingress from them on the cross-Region ports."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig, SpokeConfig
from hubspoke.constructs.cross_account import role_arn
from hubspoke.names import peer_role_name
from hubspoke.ports import PeerPort
from hubspoke.topology import cross_account


def _logical(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", text) if part)


class PeerSide(Construct):
    """Routes and security-group ingress that let one VPC use a peering towards one peer VPC.

    Example::

        PeerSide(stack, "ToHub", peering_id=peering.ref, route_table_ids=rts,
                 security_group_id=sg.security_group_id, peer_cidrs=config.hub.all_cidrs, peer_name="hub",
                 ports=FROM_HUB)

    Used on both sides: the spoke's Network stack (towards the hub) and the spoke's Link stack in the hub
    Region (towards that spoke). Ingress comes only from the peer's CIDRs (security groups cannot be
    referenced across Regions) and only on `ports`: hubspoke.ports.FROM_HUB on a spoke, FROM_SPOKE on the hub.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        peering_id: str,
        route_table_ids: Sequence[tuple[str, str]],
        security_group_id: str,
        peer_cidrs: Sequence[str],
        peer_name: str,
        ports: Sequence[PeerPort],
    ) -> None:
        super().__init__(scope, construct_id)
        for key, table_id in route_table_ids:
            for cidr in peer_cidrs:
                ec2.CfnRoute(
                    self,
                    f"Route{_logical(key)}To{_logical(cidr)}",
                    route_table_id=table_id,
                    destination_cidr_block=cidr,
                    vpc_peering_connection_id=peering_id,
                )
        for cidr in peer_cidrs:
            for port in ports:
                is_icmp = port.protocol == "icmp"
                ec2.CfnSecurityGroupIngress(
                    self,
                    f"From{_logical(cidr)}{_logical(port.label)}",
                    group_id=security_group_id,
                    ip_protocol=port.protocol,
                    cidr_ip=cidr,
                    from_port=port.port,
                    to_port=port.icmp_code if is_icmp else port.port,
                    description=f"{port.purpose} from {peer_name} {cidr}",
                )


class PeerPathSecurityGroup(ec2.SecurityGroup):
    """A Region's cross-Region security group: its ingress comes only from peer CIDRs, added by PeerSide.

    Example::

        sg = PeerPathSecurityGroup(stack, "PeerPath", vpc=net.vpc)  # attached to the hosts peers reach
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc) -> None:
        super().__init__(
            scope,
            construct_id,
            vpc=vpc,
            description="Cross-Region path: ingress only from peer VPC CIDRs on the ports the path needs",
            allow_all_outbound=True,
        )


class PeeringToHub(ec2.CfnVPCPeeringConnection):
    """A spoke VPC's inter-Region peering request to the hub VPC, accepted by the hub.

    Example::

        peering = PeeringToHub(stack, "PeeringToHub", config=config, spoke=spoke, vpc_id=vpc.ref,
                               hub_vpc_id=hub_vpc_id)

    Same-account inter-Region peerings are accepted automatically; across accounts the hub's peer role
    accepts (AWS::EC2::VPCPeeringConnection, PeerOwnerId and PeerRoleArn).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HubSpokeConfig,
        spoke: SpokeConfig,
        vpc_id: str,
        hub_vpc_id: str,
    ) -> None:
        hub_account = config.account_of(config.hub)
        peer_role = (
            role_arn(scope, account=hub_account, name=peer_role_name(config.environment, spoke.region))
            if cross_account(config, spoke)
            else None
        )
        super().__init__(
            scope,
            construct_id,
            vpc_id=vpc_id,
            peer_vpc_id=hub_vpc_id,
            peer_region=config.hub.region,
            peer_owner_id=hub_account if peer_role else None,
            peer_role_arn=peer_role,
        )
