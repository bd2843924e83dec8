"""One side of a hub-spoke peering: routes to the peer's CIDRs and ingress from them on the cross-Region ports."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from hubspoke.ports import CROSS_REGION_PORTS


def _logical(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", text) if part)


class PeerSide(Construct):
    """Routes and security-group ingress that let one VPC use a peering towards one peer VPC.

    Example::

        PeerSide(stack, "ToHub", peering_id=peering.ref, route_table_ids=rts,
                 security_group_id=sg.security_group_id, peer_cidrs=config.hub.all_cidrs, peer_name="hub")

    Used on both sides: the spoke's Network stack (towards the hub) and the spoke's Link stack in the hub
    Region (towards that spoke). Ingress comes only from the peer's CIDRs (security groups cannot be
    referenced across Regions) and only on hubspoke.ports.CROSS_REGION_PORTS.
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
            for port in CROSS_REGION_PORTS:
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
