"""cdk-nag acknowledgments for resources that aws-cdk-lib creates for us (EKS kubectl provider, S3 deployment).

We do not write these roles and functions; each finding is listed exactly, with why it is acceptable.
"""

from __future__ import annotations

from aws_cdk import CfnCondition, Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import IConstruct

from hubspoke.constructs.provider import (
    FRAMEWORK_RUNTIME,
    LAMBDA_BASIC,
    LAMBDA_VPC,
    acknowledge_provider_framework,
    logical_id,
)
from hubspoke.policy.acks import acknowledge


def acknowledge_eks_internals(cluster: eks.Cluster) -> None:
    """The control-plane role and the kubectl provider that aws_eks_v2 creates with the cluster."""
    acknowledge(
        cluster.role,
        "AwsSolutions-IAM4",
        reason="AmazonEKSClusterPolicy is the policy EKS requires on the cluster service role; AWS keeps "
        "it in step with what the control plane calls.",
        findings=["Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy"],
    )
    kubectl = cluster.node.find_child("KubectlProvider")
    handler = kubectl.node.find_child("Handler")
    conditions = [c for c in handler.node.find_all() if isinstance(c, CfnCondition)]
    ecr_public = [
        'Policy::{"Fn::If":["' + logical_id(c) + '",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},'
        '":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}'
        for c in conditions
    ]
    acknowledge(
        handler,
        "AwsSolutions-IAM4",
        reason="The kubectl handler of aws_eks_v2 runs in the VPC, pulls nothing but its own layer's "
        "tools, and gets only the AWS policies aws-cdk-lib assigns to it (logs, VPC ENIs, ECR read).",
        findings=[
            LAMBDA_BASIC,
            LAMBDA_VPC,
            "Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
            *ecr_public,
        ],
    )
    acknowledge(handler, "AwsSolutions-L1", reason=FRAMEWORK_RUNTIME)
    acknowledge_provider_framework(kubectl.node.find_child("Provider"), handler=handler)


def acknowledge_bucket_deployment(stack: Stack, *, bucket: IConstruct) -> None:
    """The singleton function behind s3_deployment.BucketDeployment, copying assets into `bucket`."""
    deployers = [c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment")]
    for deployer in deployers:
        acknowledge(
            deployer,
            "AwsSolutions-IAM4",
            reason="The BucketDeployment function only writes its own logs and, in the VPC, manages its "
            "network interfaces: all that AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole allow.",
            findings=[LAMBDA_BASIC, LAMBDA_VPC],
        )
        acknowledge(deployer, "AwsSolutions-L1", reason=FRAMEWORK_RUNTIME)
        acknowledge(
            deployer,
            "AwsSolutions-IAM5",
            reason="BucketDeployment copies asset objects whose keys are content hashes unknown before "
            "synth, from the CDK asset bucket of this account and Region into the lifecycle bucket only.",
            findings=[
                "Action::s3:GetObject*",
                "Action::s3:GetBucket*",
                "Action::s3:List*",
                "Action::s3:DeleteObject*",
                "Action::s3:Abort*",
                f"Resource::<{logical_id(bucket)}.Arn>/*",
                f"Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-{stack.account}-{stack.region}/*",
            ],
        )
