"""The role that lets a spoke in another account accept its peering into the hub VPC.

Reading stack outputs across accounts needs no role of ours: CDK adds a reader role to the producer stack for
each weak reference that crosses accounts (aws-cdk-lib 2.275 README, "Reference strength").
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.names import peer_role_name
from hubspoke.policy.acks import acknowledge


def role_arn(scope: Construct, *, account: str, name: str) -> str:
    """The ARN of role `name` in `account`, in the partition `scope` deploys to (aws, aws-cn, aws-us-gov)."""
    return f"arn:{Stack.of(scope).partition}:iam::{account}:role/{name}"


class PeerAccessRole(iam.Role):
    """In the hub account: lets a spoke's account accept its peering into the hub VPC.

    Example::

        PeerAccessRole(stack, "PeerRole", environment="dev", spoke="us-west-2", spoke_account="210987654321",
                       hub_vpc_id=vpc_id)
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
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            role_name=peer_role_name(environment, spoke),
            description=f"Accepts the peering from spoke {spoke}",
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
                    # Only the spoke's account and Region ("Identity and access management for VPC peering",
                    # "Accept a VPC peering connection": ec2:RequesterVpc); vpc/*, as the spoke VPC comes
                    # later.
                    "ArnLike": {
                        "ec2:RequesterVpc": f"arn:{stack.partition}:ec2:{spoke}:{spoke_account}:vpc/*"
                    },
                },
            )
        )
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            reason="The peering connection ID does not exist before the spoke requests it; the wildcard is "
            "narrowed by the ec2:AccepterVpc condition to the hub VPC and by ec2:RequesterVpc to the spoke "
            "account.",
            findings=[
                f"Resource::arn:<AWS::Partition>:ec2:{stack.region}:{stack.account}:vpc-peering-connection/*"
            ],
        )
