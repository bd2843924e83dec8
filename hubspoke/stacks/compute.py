"""A Region's Compute stack: EKS, the HyperPod cluster it orchestrates, and the Kubernetes storage on the local CNQ."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Fn, RemovalPolicy, Stack, Stage
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke import training_metrics
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.dataset_loader import DatasetLoader
from hubspoke.constructs.hyperpod.access import ClusterAccess
from hubspoke.constructs.hyperpod.addons import OperatorAddons
from hubspoke.constructs.hyperpod.cluster import HyperPodCluster, efa_security_group
from hubspoke.constructs.hyperpod.dependencies import HyperPodDependencies
from hubspoke.constructs.hyperpod.eks import HyperPodEks
from hubspoke.constructs.hyperpod.lifecycle import write_lifecycle_scripts
from hubspoke.constructs.image_repository import TrainingImageRepository
from hubspoke.constructs.model_export import ModelExport
from hubspoke.k8s.export import SERVICE_ACCOUNT as EXPORT_SERVICE_ACCOUNT
from hubspoke.k8s.names import NAMESPACE
from hubspoke.k8s.storage import storage_manifests
from hubspoke.names import eks_cluster_name, hyperpod_cluster_name
from hubspoke.outputs import (
    ACCESS_HOST_INSTANCE,
    EKS_CLUSTER_NAME,
    EKS_ENDPOINT,
    HYPERPOD_CLUSTER_ARN,
    MODEL_EXPORT_BUCKET,
    TRAINING_IMAGE_REPOSITORY,
)
from hubspoke.policy.acks import acknowledge
from hubspoke.stacks.base import PlannedStack, sibling
from hubspoke.stacks.storage import StorageStack
from hubspoke.stacks.wiring import NetworkView
from hubspoke.topology import StackPlan


def local_floating_ips(joined: str) -> list[str]:
    """Two of a CNQ cluster's floating IPs, given joined (the same one twice when the cluster has only one)."""
    # The list's length is known only at deploy; doubling it makes index 1 exist even for a single IP
    # ("a" -> "a,a"), while "a,b,..." still yields a and b: the two volumes land on different nodes.
    doubled = Fn.split(",", Fn.join(",", [joined, joined]))
    return [Fn.select(0, doubled), Fn.select(1, doubled)]


class ComputeStack(PlannedStack):
    """EKS + SageMaker HyperPod in one Region, and the dataset/checkpoint volumes on that Region's CNQ.

    Example::

        ComputeStack(stage, "compute-us-west-2", config=config, plan=plan)
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        region = config.region_config(plan.region)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"EKS and SageMaker HyperPod in {region.region}"
        )
        compute = region.compute
        network = NetworkView(self, "Network", stage=scope, config=config, region=region.region)
        nodes_sg = efa_security_group(self, "NodeSecurityGroup", vpc=network.vpc)
        plane = HyperPodEks(
            self,
            "Eks",
            cluster_name=eks_cluster_name(config, region),
            vpc=network.vpc,
            subnets=network.private_subnets,
            kubernetes_version=compute.kubernetes_version,
            service_cidr=compute.service_cidr,
            public_access_cidrs=compute.public_access_cidrs,
            security_group=nodes_sg,
        )
        dependencies = HyperPodDependencies(
            self,
            "Dependencies",
            cluster=plane.cluster,
            subnets=network.private_subnets,
            security_group=nodes_sg,
        )
        for addon in plane.core_addons:
            dependencies.node.add_dependency(addon)
        # Rendered inside this synth's own output directory, so it goes when cdk.out goes; a temp
        # directory per synth would outlive it and fill /tmp on a CI runner that synthesizes often.
        stage = Stage.of(self)
        if stage is None:  # a Stack always has an App above it; this keeps the type checker honest
            raise ValueError(f"{self.node.path} must be created inside a CDK App")
        lifecycle_dir = write_lifecycle_scripts(Path(stage.outdir) / f"lifecycle-src-{self.node.id}")
        hyperpod = HyperPodCluster(
            self,
            "HyperPod",
            cluster_name=hyperpod_cluster_name(config, region),
            compute=compute,
            eks_cluster=plane.cluster,
            subnet=network.accelerator_subnet,
            security_groups=[nodes_sg],
            lifecycle_dir=lifecycle_dir,
        )
        # HyperPod refuses an EKS cluster without its dependencies chart (HyperPod EKS guide, Helm step).
        hyperpod.cluster.node.add_dependency(dependencies)
        operators = OperatorAddons(
            self, "Operators", cluster=plane.cluster, kubernetes_version=compute.kubernetes_version
        )
        # Their controllers schedule onto HyperPod nodes; without nodes the add-ons never turn ACTIVE.
        operators.node.add_dependency(hyperpod.nodes_ready)
        if region.storage.enabled:
            storage = sibling(scope, StorageStack, "storage", region.region)
            floating_ips = local_floating_ips(storage.cluster.floating_ips_joined)
            manifest = plane.cluster.add_manifest(
                "Storage", *storage_manifests(region, floating_ips=floating_ips)
            )
            manifest.node.add_dependency(dependencies)
            if storage.shift is not None and storage.loader is not None:
                # `hubspoke dataset load` runs its Job here, next to the hub's data (hubspoke/k8s/load.py).
                DatasetLoader(
                    self,
                    "DatasetLoader",
                    cluster=plane.cluster,
                    environment=config.environment,
                    shift_user_name=storage.shift.user.user_name,
                    # The loader's own Qumulo login, not the admin's (hubspoke/constructs/cnq/identity.py).
                    login_secret_arn=storage.loader.secret.secret_arn,
                    rest_address=floating_ips[0],
                    after=manifest,
                )
        # People: access entries for the configured administrators and the SSM host they tunnel through.
        self.access = ClusterAccess(
            self,
            "Access",
            cluster=plane.cluster,
            access=config.access,
            vpc=network.vpc,
            subnet=network.private_subnets[0],
        )
        self.eks = plane
        self.hyperpod = hyperpod
        # Where the CloudWatch agent files the training job's metric records (their `_aws.LogGroupName`):
        # ours, with a retention, instead of a default group the agent would create without one.
        logs.LogGroup(
            self,
            "TrainingMetrics",
            log_group_name=training_metrics.log_group_name(config.environment),
            # A year: Control Tower CT.CLOUDWATCH.PR.2 refuses log groups kept for less.
            retention=logs.RetentionDays.ONE_YEAR,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # The nodes pull the training image from their own Region: `hubspoke image build` pushes to each.
        images = TrainingImageRepository(self, "TrainingImages", config=config)
        # Trained checkpoints leave the Region's CNQ for this bucket (`hubspoke render export`).
        export = ModelExport(
            self,
            "ModelExport",
            cluster_name=plane.cluster.cluster_name,
            namespace=NAMESPACE,
            service_account=EXPORT_SERVICE_ACCOUNT,
        )
        _accept_lifecycle_bucket_findings(hyperpod)
        _accept_execution_role_findings(hyperpod)
        self.publish(EKS_CLUSTER_NAME, plane.cluster.cluster_name)
        self.publish(HYPERPOD_CLUSTER_ARN, hyperpod.cluster.attr_cluster_arn)
        self.publish(EKS_ENDPOINT, plane.cluster.cluster_endpoint)
        if self.access.host is not None:
            self.publish(ACCESS_HOST_INSTANCE, self.access.host.instance_id)
        self.publish(TRAINING_IMAGE_REPOSITORY, images.repository.repository_uri)
        self.publish(MODEL_EXPORT_BUCKET, export.bucket.bucket_name)


def _accept_execution_role_findings(hyperpod: HyperPodCluster) -> None:
    """checkov's IAM checks on the HyperPod execution role: what the HyperPod EKS guide asks of it."""
    for rule in ("CKV_AWS_109", "CKV_AWS_111"):
        acknowledge(
            hyperpod.role,
            rule,
            reason="The VPC CNI on HyperPod nodes creates, attaches and shares network interfaces at run time, "
            "whose IDs no template knows; the EC2 actions without a resource are the ones the SageMaker "
            "Developer Guide lists for the HyperPod (EKS) execution role.",
            resource_types=["AWS::IAM::Policy"],
        )


def _accept_lifecycle_bucket_findings(hyperpod: HyperPodCluster) -> None:
    """Control Tower and checkov bucket controls that the lifecycle-scripts bucket does not need, with reasons."""
    bucket = hyperpod.lifecycle_bucket
    not_logged = (
        "The bucket only holds lifecycle scripts rendered from this repository at synth; every change to them is "
        "a CloudFormation deployment, recorded by CloudTrail."
    )
    acknowledge(bucket, "CT.S3.PR.2", reason=not_logged)
    acknowledge(bucket, "CKV_AWS_18", reason=not_logged, resource_types=["AWS::S3::Bucket"])
    acknowledge(
        bucket,
        "CT.S3.PR.9",
        reason="Object Lock without a default retention locks nothing; with one, each deploy's prune would only "
        "add delete markers and the locked script versions would outlive the bucket's one-year expiry of "
        "superseded versions. Once on, Object Lock cannot be turned off (Amazon S3 User Guide, 'Object Lock "
        "considerations'). Versioning already keeps a year of superseded scripts.",
    )
    acknowledge(
        bucket,
        "CT.S3.PR.10",
        reason="The scripts are rendered from this repository and hold no secrets (the lifecycle tests check "
        "what they contain); SSE-S3 encrypts them at rest and only the HyperPod role and the deployment read "
        "or write them.",
    )


def build_compute(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return ComputeStack(scope, plan.id, config=config, plan=plan)
