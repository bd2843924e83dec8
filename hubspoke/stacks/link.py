"""Hub-side stacks that exist per spoke, so that adding a spoke never changes the hub's own templates."""

from __future__ import annotations

from aws_cdk import Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.peering import PeerSide
from hubspoke.mtu import peer_mtu_parameters
from hubspoke.policy.acks import acknowledge
from hubspoke.stacks.base import PlannedStack
from hubspoke.stacks.network import (
    PEER_PATH_SG_OUTPUT,
    PEERING_ID_OUTPUT,
    hub_route_table_ids,
    link_reader_role_name,
    peer_role_name,
)
from hubspoke.topology import StackPlan, cross_account, stack_name


class LinkStack(PlannedStack):
    """The hub's side of one spoke's peering: routes to the spoke's CIDRs and ingress from them.

    Example::

        LinkStack(stage, "link-us-west-2", config=config, plan=plan)  # deployed after the spoke's Network

    Everything it needs from the hub and the spoke arrives as Fn::GetStackOutput, so neither side's
    template mentions this stack.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        assert plan.spoke is not None
        spoke = config.spoke(plan.spoke)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"hub-side routes and ingress for spoke {spoke.region}"
        )
        reader = None
        if cross_account(config, spoke):
            reader = f"arn:{self.partition}:iam::{config.account_of(spoke)}:role/{link_reader_role_name(config, spoke)}"
        peering_id = Fn.get_stack_output(
            stack_name(config, "network", spoke.region), PEERING_ID_OUTPUT, spoke.region, reader
        )
        PeerSide(
            self,
            "ToSpoke",
            peering_id=peering_id,
            route_table_ids=hub_route_table_ids(config),
            security_group_id=Fn.get_stack_output(
                stack_name(config, "network", config.hub.region), PEER_PATH_SG_OUTPUT
            ),
            peer_cidrs=spoke.all_cidrs,
            peer_name=f"spoke {spoke.region}",
        )
        # The hub's hosts pin the route MTU towards this spoke from here (hubspoke.mtu), so the hub's own
        # templates stay untouched when spokes come and go.
        for i, (name, value) in enumerate(peer_mtu_parameters(config, spoke)):
            ssm.StringParameter(
                self,
                f"PeerMtu{i}",
                parameter_name=name,
                string_value=value,
                description=f"Route MTU from the hub towards spoke {spoke.region}",
            )


class PeerAccessStack(PlannedStack):
    """The role a spoke in another account assumes to accept its peering into the hub VPC.

    Example::

        PeerAccessStack(stage, "peer-access-us-west-2", config=config, plan=plan)  # only across accounts
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        assert plan.spoke is not None
        spoke = config.spoke(plan.spoke)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"peer role for spoke {spoke.region} (another account)"
        )
        hub_net = stack_name(config, "network", config.hub.region)
        vpc_id = Fn.get_stack_output(hub_net, "VpcId")
        role = iam.Role(
            self,
            "PeerRole",
            role_name=peer_role_name(config, spoke),
            description=f"Accepts the peering from spoke {spoke.region} and reads the hub network outputs",
            assumed_by=iam.AccountPrincipal(config.account_of(spoke)),
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:AcceptVpcPeeringConnection"],
                resources=[self.format_arn(service="ec2", resource="vpc", resource_name=vpc_id)],
            )
        )
        peering_arn = self.format_arn(service="ec2", resource="vpc-peering-connection", resource_name="*")
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:AcceptVpcPeeringConnection"],
                resources=[peering_arn],
                conditions={
                    "StringEquals": {
                        "ec2:AccepterVpc": self.format_arn(
                            service="ec2", resource="vpc", resource_name=vpc_id
                        )
                    }
                },
            )
        )
        # The spoke's stacks read the hub's network and storage outputs (Fn::GetStackOutput with this role).
        readable = [stack_name(config, kind, config.hub.region) for kind in ("network", "storage")]
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["cloudformation:DescribeStacks"],
                resources=[
                    self.format_arn(service="cloudformation", resource="stack", resource_name=f"{name}/*")
                    for name in readable
                ],
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            reason="The peering connection ID does not exist before the spoke requests it; the wildcard is "
            "narrowed by the ec2:AccepterVpc condition to the hub VPC. The stack ARN ends in CloudFormation's "
            "stack-ID suffix, which changes if the hub network stack is ever re-created.",
            findings=[
                f"Resource::arn:<AWS::Partition>:ec2:{plan.region}:{plan.account}:vpc-peering-connection/*",
                *(
                    f"Resource::arn:<AWS::Partition>:cloudformation:{plan.region}:{plan.account}:stack/{name}/*"
                    for name in readable
                ),
            ],
        )


def build_link(
    scope: Construct, plan: StackPlan, *, config: HubSpokeConfig, built: dict[str, Stack]
) -> Stack:
    return LinkStack(scope, plan.id, config=config, plan=plan)


def build_peer_access(
    scope: Construct, plan: StackPlan, *, config: HubSpokeConfig, built: dict[str, Stack]
) -> Stack:
    return PeerAccessStack(scope, plan.id, config=config, plan=plan)
