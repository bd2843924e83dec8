"""The two roles that let a hub and a spoke in different accounts peer and read each other's stack outputs."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.names import link_reader_role_name, peer_role_name
from hubspoke.policy.acks import acknowledge


def role_arn(scope: Construct, *, account: str, name: str) -> str:
    """The ARN of role `name` in `account`, in the partition `scope` deploys to (aws, aws-cn, aws-us-gov)."""
    return f"arn:{Stack.of(scope).partition}:iam::{account}:role/{name}"


def _stack_arn(stack: Stack, name: str) -> str:
    # The suffix is CloudFormation's stack ID, which changes if the stack is ever re-created.
    return stack.format_arn(service="cloudformation", resource="stack", resource_name=f"{name}/*")


class PeerAccessRole(iam.Role):
    """In the hub account: lets a spoke's account accept its peering into the hub VPC and read the hub's outputs.

    Example::

        PeerAccessRole(stack, "PeerRole", environment="dev", spoke="us-west-2", spoke_account="210987654321",
                       hub_vpc_id=vpc_id, readable_stacks=["hubspoke-dev-network-us-east-2"])
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        spoke: str,
        spoke_account: str,
        hub_vpc_id: str,
        readable_stacks: Sequence[str],
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            role_name=peer_role_name(environment, spoke),
            description=f"Accepts the peering from spoke {spoke} and reads the hub network outputs",
            assumed_by=iam.AccountPrincipal(spoke_account),
        )
        stack = Stack.of(self)
        hub_vpc = stack.format_arn(service="ec2", resource="vpc", resource_name=hub_vpc_id)
        self.add_to_policy(
            iam.PolicyStatement(actions=["ec2:AcceptVpcPeeringConnection"], resources=[hub_vpc])
        )
        peering_arn = stack.format_arn(service="ec2", resource="vpc-peering-connection", resource_name="*")
        self.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:AcceptVpcPeeringConnection"],
                resources=[peering_arn],
                # ec2:AccepterVpc is an ARN-type key (Service Authorization Reference, Amazon EC2): compare it
                # with an ARN operator, as the VPC Peering Guide's IAM examples do (a string operator on it is
                # a type mismatch IAM Access Analyzer policy validation reports).
                conditions={
                    "ArnEquals": {"ec2:AccepterVpc": hub_vpc},
                    # Only a request from the spoke's account and Region: the VPC Peering Guide's example for
                    # accepting from a specific account ("Identity and access management for VPC peering",
                    # "Accept a VPC peering connection") conditions ec2:RequesterVpc on that account's VPC ARNs.
                    # The spoke VPC's ID is not known yet (this role exists before the spoke network that
                    # requests the peering), so the ARN ends in vpc/*.
                    "ArnLike": {
                        "ec2:RequesterVpc": f"arn:{stack.partition}:ec2:{spoke}:{spoke_account}:vpc/*"
                    },
                },
            )
        )
        # The spoke's stacks read the hub's outputs with Fn::GetStackOutput and this role.
        self.add_to_policy(
            iam.PolicyStatement(
                actions=["cloudformation:DescribeStacks"],
                resources=[_stack_arn(stack, name) for name in readable_stacks],
            )
        )
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            reason="The peering connection ID does not exist before the spoke requests it; the wildcard is "
            "narrowed by the ec2:AccepterVpc condition to the hub VPC and by ec2:RequesterVpc to the spoke "
            "account. The stack ARN ends in CloudFormation's stack-ID suffix, which changes if the hub network stack is ever re-created.",
            findings=[
                f"Resource::arn:<AWS::Partition>:ec2:{stack.region}:{stack.account}:vpc-peering-connection/*",
                *(
                    f"Resource::arn:<AWS::Partition>:cloudformation:{stack.region}:{stack.account}:stack/{name}/*"
                    for name in readable_stacks
                ),
            ],
        )


class LinkReaderRole(iam.Role):
    """In a spoke account: lets the hub account's Link stack read this spoke stack's outputs (the peering ID).

    Example::

        LinkReaderRole(stack, "LinkReader", environment="dev", spoke="us-west-2", hub_account="123456789012")
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, spoke: str, hub_account: str
    ) -> None:
        stack = Stack.of(scope)
        super().__init__(
            scope,
            construct_id,
            role_name=link_reader_role_name(environment, spoke),
            description="Lets the hub account's Link stack read this stack's peering ID (Fn::GetStackOutput)",
            assumed_by=iam.AccountPrincipal(hub_account),
            inline_policies={
                "DescribeThisStack": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["cloudformation:DescribeStacks"],
                            resources=[_stack_arn(stack, stack.stack_name)],
                        )
                    ]
                )
            },
        )
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            reason="The only wildcard is CloudFormation's stack-ID suffix of this very stack's ARN; "
            "the role can describe nothing else.",
            findings=[
                f"Resource::arn:<AWS::Partition>:cloudformation:{stack.region}:{stack.account}:stack/{stack.stack_name}/*"
            ],
        )
