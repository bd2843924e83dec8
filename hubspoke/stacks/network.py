"""The Network stack of one Region: its VPC and, in a spoke, the peering to the hub and the spoke's side of it."""

from __future__ import annotations

import re

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.peering import PeerSide
from hubspoke.constructs.vpc import RegionVpc
from hubspoke.policy.acks import acknowledge
from hubspoke.policy.rules import PRIVATE_RT
from hubspoke.stacks.base import PlannedStack
from hubspoke.topology import StackPlan, cross_account, stack_name

# Output names other stacks read with Fn::GetStackOutput; renaming one breaks deployed consumers.
VPC_ID_OUTPUT = "VpcId"
PEER_PATH_SG_OUTPUT = "PeerPathSecurityGroupId"
PEERING_ID_OUTPUT = "PeeringConnectionId"


def route_table_output(az_id: str) -> str:
    return PRIVATE_RT + "".join(p.capitalize() for p in re.split(r"[^a-z0-9]+", az_id))


def peer_role_name(config: HubSpokeConfig, spoke: RegionConfig) -> str:
    """Role in the hub account that the spoke account assumes to accept the peering and read hub outputs."""
    return f"hubspoke-{config.environment}-peer-{spoke.region}"


def link_reader_role_name(config: HubSpokeConfig, spoke: RegionConfig) -> str:
    """Role in the spoke account that the hub account assumes to read the spoke's peering ID."""
    return f"hubspoke-{config.environment}-link-reader-{spoke.region}"


class NetworkStack(PlannedStack):
    """A Region's VPC, its cross-Region security group and, in a spoke, the peering towards the hub.

    Example::

        hub = NetworkStack(stage, "network-us-east-2", config=config, region=config.hub, plan=plan)
        hub.vpc, hub.accelerator_subnet, hub.peer_path_sg  # what Storage and Compute build on
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HubSpokeConfig,
        region: RegionConfig,
        plan: StackPlan,
    ) -> None:
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"network of {region.region} ({_role(config, region)})"
        )
        self.region_config = region
        net = RegionVpc(self, "Network", region=region)
        self.vpc: ec2.IVpc = net.vpc
        self.accelerator_subnet: ec2.ISubnet = net.accelerator_subnet
        self.private_subnets: list[ec2.ISubnet] = list(net.vpc.private_subnets)
        self.flow_log_group = net.flow_log_group
        self.peer_path_sg = ec2.SecurityGroup(
            self,
            "PeerPath",
            vpc=self.vpc,
            description="Cross-Region path: ingress only from peer VPC CIDRs on the ports the path needs",
            allow_all_outbound=True,
        )
        CfnOutput(self, VPC_ID_OUTPUT, value=net.cfn_vpc.ref)
        CfnOutput(self, PEER_PATH_SG_OUTPUT, value=self.peer_path_sg.security_group_id)
        for az, table in net.private_route_tables.items():
            CfnOutput(self, route_table_output(az), value=table.ref)
        if region.region != config.hub.region:
            self._peer_with_hub(config, region, net)

    def _peer_with_hub(self, config: HubSpokeConfig, spoke: RegionConfig, net: RegionVpc) -> None:
        hub = config.hub
        hub_account = config.account_of(hub)
        role_arn = None
        if cross_account(config, spoke):
            role_arn = f"arn:{self.partition}:iam::{hub_account}:role/{peer_role_name(config, spoke)}"
            self._link_reader_role(config, spoke)
        hub_vpc_id = Fn.get_stack_output(
            stack_name(config, "network", hub.region), VPC_ID_OUTPUT, hub.region, role_arn
        )
        # Spoke requests, hub accepts: same-account inter-Region peerings are accepted automatically,
        # cross-account ones through the hub-side peer role (AWS::EC2::VPCPeeringConnection, PeerRoleArn).
        peering = ec2.CfnVPCPeeringConnection(
            self,
            "PeeringToHub",
            vpc_id=net.cfn_vpc.ref,
            peer_vpc_id=hub_vpc_id,
            peer_region=hub.region,
            peer_owner_id=hub_account if role_arn else None,
            peer_role_arn=role_arn,
        )
        CfnOutput(self, PEERING_ID_OUTPUT, value=peering.ref)
        PeerSide(
            self,
            "ToHub",
            peering_id=peering.ref,
            route_table_ids=[(az, t.ref) for az, t in net.private_route_tables.items()],
            security_group_id=self.peer_path_sg.security_group_id,
            peer_cidrs=hub.all_cidrs,
            peer_name=f"hub {hub.region}",
        )

    def _link_reader_role(self, config: HubSpokeConfig, spoke: RegionConfig) -> None:
        role = iam.Role(
            self,
            "LinkReader",
            role_name=link_reader_role_name(config, spoke),
            description="Lets the hub account's Link stack read this stack's peering ID (Fn::GetStackOutput)",
            assumed_by=iam.AccountPrincipal(config.account_of(config.hub)),
            inline_policies={
                "DescribeThisStack": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["cloudformation:DescribeStacks"],
                            resources=[
                                self.format_arn(
                                    service="cloudformation",
                                    resource="stack",
                                    resource_name=f"{self.stack_name}/*",
                                )
                            ],
                        )
                    ]
                )
            },
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            reason="The only wildcard is CloudFormation's stack-ID suffix of this very stack's ARN; "
            "the role can describe nothing else.",
            findings=[
                f"Resource::arn:<AWS::Partition>:cloudformation:{self.region}:{self.account}:stack/{self.stack_name}/*"
            ],
        )


def _role(config: HubSpokeConfig, region: RegionConfig) -> str:
    return "hub" if region.region == config.hub.region else f"spoke of {config.hub.region}"


def hub_route_table_ids(config: HubSpokeConfig) -> list[tuple[str, str]]:
    """The hub's private route table IDs, read from its Network stack's outputs (never a hub template change)."""
    hub_net = stack_name(config, "network", config.hub.region)
    return [
        (az, Fn.get_stack_output(hub_net, route_table_output(az))) for az in route_table_az_ids(config.hub)
    ]


def build_network(
    scope: Construct, plan: StackPlan, *, config: HubSpokeConfig, built: dict[str, Stack]
) -> Stack:
    return NetworkStack(scope, plan.id, config=config, region=config.region_config(plan.region), plan=plan)
