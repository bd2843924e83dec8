"""The Network stack of one Region: its VPC and, in a spoke, the peering to the hub and the spoke's side of it."""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.peering import PeeringToHub, PeerPathSecurityGroup, PeerSide
from hubspoke.constructs.vpc import RegionVpc
from hubspoke.outputs import PEER_PATH_SECURITY_GROUP, PEERING_CONNECTION, PRIVATE_ROUTE_TABLE, VPC_ID
from hubspoke.ports import FROM_HUB
from hubspoke.stacks.base import PlannedStack, sibling
from hubspoke.topology import StackPlan


class NetworkStack(PlannedStack):
    """A Region's VPC, its cross-Region security group and, in a spoke, the peering towards the hub.

    Example::

        NetworkStack(stage, "network-us-east-2", config=config, plan=plan)

    Other stacks use its attributes; CDK turns each use into a weak reference. Named outputs are the CLI's.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        region = config.region_config(plan.region)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"network of {region.region} ({_role(config, region)})"
        )
        net = RegionVpc(self, "Network", region=region)
        peer_path = PeerPathSecurityGroup(self, "PeerPath", vpc=net.vpc)
        self.vpc_id = net.cfn_vpc.ref
        self.peer_path_security_group_id = peer_path.security_group_id
        self.private_route_table_ids = {az: t.ref for az, t in net.private_route_tables.items()}
        self.private_subnet_ids = {az: net.subnets[f"private-{az}"].ref for az in region.resolved_az_ids}
        self.accelerator_subnet_id = net.accelerator_subnet.subnet_id
        self.flow_log_group_name = net.flow_log_group.log_group_name
        self.peering_connection_id: str | None = None
        self.publish(VPC_ID, self.vpc_id)
        self.publish(PEER_PATH_SECURITY_GROUP, self.peer_path_security_group_id)
        for az, table_id in self.private_route_table_ids.items():
            self.publish(PRIVATE_ROUTE_TABLE, table_id, az)
        if region.region == config.hub.region:
            return
        spoke = config.spoke(region.region)
        hub = config.hub
        # Spoke requests, hub accepts: same-account inter-Region peerings are accepted automatically,
        # cross-account ones through the hub-side peer role (AWS::EC2::VPCPeeringConnection, PeerRoleArn).
        peering = PeeringToHub(
            self,
            "PeeringToHub",
            config=config,
            spoke=spoke,
            vpc_id=net.cfn_vpc.ref,
            hub_vpc_id=sibling(scope, NetworkStack, "network", hub.region).vpc_id,
        )
        self.peering_connection_id = peering.ref
        self.publish(PEERING_CONNECTION, peering.ref)
        PeerSide(
            self,
            "ToHub",
            peering_id=peering.ref,
            route_table_ids=[(az, t.ref) for az, t in net.private_route_tables.items()],
            security_group_id=peer_path.security_group_id,
            peer_cidrs=hub.all_cidrs,
            peer_name=f"hub {hub.region}",
            ports=FROM_HUB,
        )


def _role(config: HubSpokeConfig, region: RegionConfig) -> str:
    return "hub" if region.region == config.hub.region else f"spoke of {config.hub.region}"


def build_network(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return NetworkStack(scope, plan.id, config=config, plan=plan)
