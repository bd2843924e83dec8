"""The SageMaker HyperPod cluster on EKS: instance groups, EFA security group, execution role, lifecycle scripts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import Aws, CfnTag, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from hubspoke.config.schema import ComputeConfig
from hubspoke.constructs.buckets import events_to_eventbridge
from hubspoke.constructs.hyperpod.lifecycle import ON_CREATE
from hubspoke.constructs.hyperpod.nag import acknowledge_bucket_deployment
from hubspoke.constructs.hyperpod.nodes_ready import HyperPodNodesReady
from hubspoke.constructs.keys import retained_key
from hubspoke.constructs.provider import logical_id
from hubspoke.policy.acks import acknowledge

LIFECYCLE_PREFIX = "lifecycle/"
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"
# Customer managed keys are "only supported for clusters using the continuous node provisioning mode"
# (SageMaker developer guide, "Customer managed AWS KMS key encryption for SageMaker HyperPod"; no encryption
# context, so the default key policy: hubspoke/constructs/keys.py), which also retries failed launches
# ("Continuous provisioning for enhanced cluster operations on Amazon EKS").
NODE_PROVISIONING_MODE = "Continuous"
# ASSUMED: SageMaker's launch grants on the volume key may lack kms:GrantIsForAWSResource (no stored page
# says; EKS's CreateCluster grant does), so the key goes without the CT.KMS.PR.3 Deny that would refuse every
# launch (tests/policy/test_hyperpod_rules.py evaluates both readings; docs/decisions.md, "Keys without
# CT.KMS.PR.3").
VOLUME_KEY_GRANTS = (
    "ASSUMED: the grants SageMaker HyperPod makes on the volume key may be made in the caller's name without "
    "kms:GrantIsForAWSResource, as EKS documents its CreateCluster grant is; the CT.KMS.PR.3 Deny would then "
    "refuse them and every node launch. Without it a grant made either way succeeds."
)


def lifecycle_bucket_name(cluster_name: str) -> str:
    """`sagemaker-<cluster>-<first 8 hex of the stack ID's UUID>`: new with every creation of the stack.

    The prefix: the nodes' AmazonSageMakerClusterInstanceRolePolicy reads only `s3://sagemaker-` buckets
    (SageMaker API reference, ClusterLifeCycleConfig.SourceS3Uri; moto's CreateCluster refuses others). The
    suffix: the bucket is retained, so a fixed name fails every retry after a rolled-back create; AWS::StackId
    is new per creation. Length at most 10 + 40 + 1 + 8 = 59, under S3's 63 (hubspoke/regions.py's longest
    code).
    """
    uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    return Fn.join("", [f"{LIFECYCLE_BUCKET_PREFIX}{cluster_name}-", Fn.select(0, Fn.split("-", uuid))])


def allow_efa(group: ec2.SecurityGroup) -> None:
    """EFA needs all traffic to and from the group itself; without it HyperPod's health checks fail."""
    group.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA and NCCL between HyperPod nodes (self)")
    # An explicit egress resource: with allowAllOutbound the L2 would drop a self-egress rule, and
    # HyperPod checks for the rule itself, not for an equivalent 0.0.0.0/0 one.
    if group.node.try_find_child("EfaSelfEgress") is None:
        ec2.CfnSecurityGroupEgress(
            group,
            "EfaSelfEgress",
            group_id=group.security_group_id,
            ip_protocol="-1",
            destination_security_group_id=group.security_group_id,
            description="EFA and NCCL between HyperPod nodes (self)",
        )


def efa_security_group(scope: Construct, construct_id: str, *, vpc: ec2.IVpc) -> ec2.SecurityGroup:
    """The HyperPod nodes' (and EKS control plane's) security group, with the EFA self-rules."""
    group = ec2.SecurityGroup(
        scope,
        construct_id,
        vpc=vpc,
        description="HyperPod nodes and EKS control plane: all traffic within the group (EFA), egress out",
        # Nodes reach AWS APIs, ECR, the CNQ mounts and the EKS endpoint.
        allow_all_outbound=True,
    )
    allow_efa(group)
    return group


class HyperPodCluster(Construct):
    """An AWS::SageMaker::Cluster orchestrated by `eks_cluster`, its instance groups in one AZ-pinned subnet.

    Example::

        sg = efa_security_group(self, "NodeSg", vpc=net.vpc)
        hp = HyperPodCluster(self, "HyperPod", cluster_name="hubspoke-dev-us-west-2", compute=region.compute,
                             eks_cluster=eks_plane.cluster, subnet=net.accelerator_subnet,
                             security_groups=[sg], lifecycle_dir=rendered_dir)
        hp.cluster.attr_cluster_arn
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        compute: ComputeConfig,
        eks_cluster: eks.Cluster,
        subnet: ec2.ISubnet,
        security_groups: Sequence[ec2.SecurityGroup],
        lifecycle_dir: Path,
    ) -> None:
        super().__init__(scope, construct_id)
        for group in security_groups:
            allow_efa(group)  # every group given to the cluster, not only ours (identical rules dedupe)
        self.volume_key = retained_key(
            self,
            "VolumeKey",
            description=f"Encrypts the secondary EBS volume (/opt/sagemaker) of HyperPod cluster {cluster_name}",
            caller_grants=VOLUME_KEY_GRANTS,
        )
        self.lifecycle_bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            bucket_name=lifecycle_bucket_name(cluster_name),
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            # Superseded script versions go after a year (Control Tower CT.S3.PR.3 and CT.S3.PR.6 ask for a
            # lifecycle rule on versioned buckets); the current version never expires.
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        events_to_eventbridge(self.lifecycle_bucket)
        acknowledge(
            self.lifecycle_bucket,
            "AwsSolutions-S1",
            reason="The bucket only holds lifecycle scripts rendered from this repository at synth; "
            "every change to them is a CloudFormation deployment, recorded by CloudTrail.",
        )
        self.upload = s3deploy.BucketDeployment(
            self,
            "LifecycleUpload",
            sources=[s3deploy.Source.asset(str(lifecycle_dir))],
            destination_bucket=self.lifecycle_bucket,
            destination_key_prefix=LIFECYCLE_PREFIX,
            retain_on_delete=True,
            # In the VPC (Control Tower CT.LAMBDA.PR.3): it only copies between S3 buckets, via the gateway
            # endpoint or NAT of the accelerator subnet.
            vpc=eks_cluster.vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=[subnet]),
        )
        acknowledge_bucket_deployment(Stack.of(self), bucket=self.lifecycle_bucket)
        self.role = self._execution_role(eks_cluster)
        # No access entry for the execution role: HyperPod creates it (SageMaker API reference,
        # ClusterMetadata EksRoleAccessEntries) and EKS allows one per principal (CreateAccessEntry); nor do
        # AWS's templates (aws/sagemaker-hyperpod-cluster-setup, hyperpod-cluster-template.yaml).
        source = f"s3://{self.lifecycle_bucket.bucket_name}/{LIFECYCLE_PREFIX}"
        groups = [
            sagemaker.CfnCluster.ClusterInstanceGroupProperty(
                instance_group_name=group.name,
                instance_type=group.instance_type,
                instance_count=group.count,
                execution_role=self.role.role_arn,
                life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                    source_s3_uri=source, on_create=ON_CREATE
                ),
                instance_storage_configs=[
                    sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                        ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                            volume_size_in_gb=group.ebs_volume_gb, volume_kms_key_id=self.volume_key.key_arn
                        )
                    )
                ],
                # Per group from config (schema.py); SageMaker takes 1 to 3 checks (botocore's sagemaker
                # service model, OnStartDeepHealthChecks), so none is the property left out.
                on_start_deep_health_checks=list(group.on_start_deep_health_checks) or None,
                threads_per_core=1,
                training_plan_arn=compute.training_plan_arn,
            )
            for group in compute.instance_groups
        ]
        self.cluster = sagemaker.CfnCluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=eks_cluster.cluster_arn
                )
            ),
            instance_groups=groups,
            node_provisioning_mode=NODE_PROVISIONING_MODE,
            node_recovery="Automatic",
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                subnets=[subnet.subnet_id],
                security_group_ids=[g.security_group_id for g in security_groups],
            ),
            # The EKS console's training-operator install looks for this tag on the HyperPod cluster.
            tags=[CfnTag(key="SageMaker", value="true")],
        )
        # Explicit: the scripts must be in S3 before any node boots.
        self.cluster.node.add_dependency(self.upload)
        # The role's policies outlive the cluster so teardown never strands node interfaces, as AWS's template
        # keeps them (aws-samples/awsome-distributed-training@7217859, sagemaker-iam-role-stack.yaml).
        self.cluster.node.add_dependency(self.role)
        # With continuous provisioning the cluster is InService before its nodes run: node-bound work waits here.
        self.nodes_ready = HyperPodNodesReady(
            self,
            "NodesReady",
            cluster=self.cluster,
            counts={g.name: g.count for g in compute.instance_groups},
            # Beside the lifecycle upload: HTTPS out through the accelerator subnet's NAT.
            vpc=eks_cluster.vpc,
            subnets=[subnet],
            deep_health_checks=any(g.on_start_deep_health_checks for g in compute.instance_groups),
        )

    def _execution_role(self, eks_cluster: eks.Cluster) -> iam.Role:
        role = iam.Role(
            self,
            "ExecutionRole",
            description="HyperPod instance role: join the EKS cluster, pull images, read lifecycle scripts",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerClusterInstanceRolePolicy")
            ],
        )
        # Pod networking: the VPC CNI on HyperPod nodes runs with the instance role (HyperPod EKS guide).
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:AttachNetworkInterface",
                    "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                resources=["*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:CreateTags"],
                resources=[f"arn:{eks_cluster.stack.partition}:ec2:*:*:network-interface/*"],
            )
        )
        # Pulls from any registry: add-on, EFA plugin and health-agent images live in AWS-owned accounts, as
        # AWS's role allows (aws/sagemaker-hyperpod-cluster-setup@b920fcf, sagemaker-iam-role-template.yaml:
        # on "*").
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetAuthorizationToken",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=["*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["eks:DescribeCluster", "eks-auth:AssumeRoleForPodIdentity"],
                resources=[eks_cluster.cluster_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.lifecycle_bucket.bucket_arn])
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[self.lifecycle_bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}*")],
            )
        )
        # The secondary EBS volume is encrypted with our key; EC2 uses it through grants on the
        # instance's behalf.
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "kms:CreateGrant",
                    "kms:Decrypt",
                    "kms:DescribeKey",
                    "kms:Encrypt",
                    "kms:GenerateDataKeyWithoutPlaintext",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                ],
                resources=[self.volume_key.key_arn],
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM4",
            reason="AmazonSageMakerClusterInstanceRolePolicy is the AWS-maintained policy HyperPod documents "
            "for cluster instances (node registration, logs, metrics); AWS evolves it with the agent.",
            findings=[
                "Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"
            ],
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            reason="The VPC CNI manages network interfaces it creates at run time (IDs unknown at deploy; "
            "EC2 Describe* and ecr:GetAuthorizationToken take no resource); images come from AWS-owned "
            "registries whose accounts vary by Region and add-on (read-only pull actions only); reads to the "
            "lifecycle prefix of our own bucket.",
            findings=[
                "Resource::*",
                "Resource::arn:<AWS::Partition>:ec2:*:*:network-interface/*",
                f"Resource::<{logical_id(self.lifecycle_bucket)}.Arn>/{LIFECYCLE_PREFIX}*",
            ],
        )
        return role
