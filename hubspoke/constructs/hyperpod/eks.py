"""The EKS control plane a HyperPod cluster is orchestrated by: private endpoint, API auth, KMS secrets, logs.

Built on aws_cdk.aws_eks_v2 (CloudFormation-native cluster; a kubectl provider only for our manifests).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Annotations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.lambda_layer_kubectl_v34 import KubectlV34Layer
from constructs import Construct

from hubspoke.constructs.hyperpod.addons import core_addons
from hubspoke.constructs.hyperpod.nag import acknowledge_eks_internals
from hubspoke.constructs.keys import retained_key
from hubspoke.eks_addons import KUBECTL_LAYER_VERSION, KUBECTL_SKEW
from hubspoke.policy.acks import acknowledge

# The kubectl Lambda layer pinned in pyproject.toml; the chart installer (dependencies.py) uses the same class.
# 1.34 is the one layer whose skew (eks_addons.KUBECTL_SKEW, refused outside it by validation) holds every
# version of the upgrade from the former default 1.33 to the default 1.35, one minor per deploy.
KubectlLayer = KubectlV34Layer


# EKS makes its CreateCluster grant as the caller, and "the condition kms:GrantIsForAWSResource is not
# supported for the CreateCluster action" (Amazon EKS User Guide, "Encrypt Kubernetes secrets with KMS on
# existing clusters"; Control Tower CT.EKS.PR.2, "Usage considerations"): CT.KMS.PR.3's Deny would roll
# Compute back, and its cfn-guard rule (ct-kms-pr-3.guard) admits no narrower exception (docs/decisions.md,
# "Keys without CT.KMS.PR.3").
SECRETS_KEY_GRANTS = (
    "EKS makes its CreateCluster grant on the secrets key in the caller's name without kms:GrantIsForAWSResource "
    "(EKS User Guide, enable-kms note; CT.EKS.PR.2 usage considerations); the CT.KMS.PR.3 Deny would refuse it "
    "and roll back the cluster. The key keeps CT.EKS.PR.2 (secrets encrypted with a customer managed key)."
)


class HyperPodEks(Construct):
    """An EKS cluster ready to orchestrate SageMaker HyperPod: no node groups, HyperPod brings the nodes.

    Example::

        eks_plane = HyperPodEks(self, "Eks", cluster_name="hubspoke-dev-us-west-2", vpc=net.vpc,
                                subnets=net.private_subnets, kubernetes_version="1.33",
                                service_cidr="172.20.0.0/16", public_access_cidrs=[], security_group=sg)
        eks_plane.cluster.cluster_arn  # Orchestrator.Eks.ClusterArn of the HyperPod cluster
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        kubernetes_version: str,
        service_cidr: str,
        public_access_cidrs: Sequence[str],
        security_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, construct_id)
        # Users meet this rule in validation (config/schema.py, _within_kubectl_skew);
        # this guard is for code that builds the construct from a config it did not load.
        if kubernetes_version not in KUBECTL_SKEW:
            raise ValueError(
                f"Kubernetes {kubernetes_version} is outside the kubectl {KUBECTL_LAYER_VERSION} layer's skew "
                f"({', '.join(KUBECTL_SKEW)}); pin the matching aws-cdk.lambda-layer-kubectl package"
            )
        self.secrets_key = retained_key(
            self,
            "SecretsKey",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {cluster_name}",
            # CT.EKS.PR.2 (secrets encrypted with a KMS key) is kept; CT.KMS.PR.3's statement cannot be.
            caller_grants=SECRETS_KEY_GRANTS,
        )
        endpoint = (
            eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*public_access_cidrs)
            if public_access_cidrs
            else eks.EndpointAccess.PRIVATE
        )
        selection = [ec2.SubnetSelection(subnets=list(subnets))]
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            version=eks.KubernetesVersion.of(kubernetes_version),
            vpc=vpc,
            vpc_subnets=selection,
            endpoint_access=endpoint,
            service_ipv4_cidr=service_cidr,
            # The HyperPod nodes' group: nodes reach the API endpoint and the control plane reaches
            # kubelets and webhooks through its self-rules.
            security_group=security_group,
            secrets_encryption_key=self.secrets_key,
            cluster_logging=[
                eks.ClusterLoggingTypes.API,
                eks.ClusterLoggingTypes.AUDIT,
                eks.ClusterLoggingTypes.AUTHENTICATOR,
                eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
                eks.ClusterLoggingTypes.SCHEDULER,
            ],
            # HyperPod instance groups are the only nodes: no managed node group, no Auto Mode.
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=KubectlLayer(self, "KubectlLayer"),
                private_subnets=list(subnets),
                # Our group (the endpoint's ENIs carry it; its self-rule admits the handler), not the
                # EKS-made cluster group: Control Tower's CT.LAMBDA.PR.3 rule accepts a security group of
                # the same template, and reports the EKS attribute as a reference it cannot check.
                security_groups=[security_group],
            ),
            output_config_command=False,
        )
        acknowledge_eks_internals(self.cluster)
        if public_access_cidrs:
            # Control Tower's CT.EKS.PR.1 (ct-eks-pr-1.guard) wants EndpointPublicAccess false, whatever the CIDRs.
            acknowledge(
                self.cluster,
                "CT.EKS.PR.1",
                reason="compute.public_access_cidrs lists the networks allowed to reach this API endpoint from "
                "outside the VPC (validation refuses 0.0.0.0/0); an account that enforces CT.EKS.PR.1 must leave "
                "the list empty and reach the endpoint from inside the VPC.",
            )
        # The tag only matters for Services of type LoadBalancer (AWS Load Balancer Controller subnet discovery,
        # EKS User Guide "Route internet traffic with AWS Load Balancer Controller"); hubspoke deploys none.
        Annotations.of(self.cluster).acknowledge_warning(
            "@aws-cdk/aws-eks:clusterMustManuallyTagSubnet",
            "No Service of type LoadBalancer runs here: training pods use EFA/NCCL and NFS, so no ELB subnet tag.",
        )
        self.core_addons = core_addons(self, cluster=self.cluster, kubernetes_version=kubernetes_version)
