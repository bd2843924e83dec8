"""EKS add-ons of a HyperPod orchestrator as constructs; their names and versions live in hubspoke/eks_addons.py."""

from __future__ import annotations

import json
from typing import cast

from aws_cdk import CfnResource
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke import training_metrics
from hubspoke.eks_addons import (
    CERT_MANAGER,
    CLOUDWATCH_OBSERVABILITY,
    CORE_ADDONS,
    TRAINING_OPERATOR,
    addon_version,
)
from hubspoke.policy.acks import acknowledge

# Where the operator add-ons' controllers run and which service account they use (pod identity).
TRAINING_OPERATOR_NAMESPACE = "aws-hyperpod"
TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"

# Container Insights (GPU metrics), container logs and an EMF TCP listener for the job's samples/s. A given
# agent.config replaces the chart's, so Application Signals is off on purpose (helm-charts@71a298ff,
# templates/linux/cloudwatch-agent-custom-resource.yaml, _helpers.tpl); EMF is served at 25888 whatever the
# address says (hubspoke/training_metrics.py).
CLOUDWATCH_CONFIGURATION = {
    "agent": {
        "config": {
            "logs": {
                "metrics_collected": {
                    "kubernetes": {"enhanced_container_insights": True, "accelerated_compute_metrics": True},
                    "emf": {"service_address": f"tcp://0.0.0.0:{training_metrics.AGENT_PORT}"},
                }
            }
        }
    },
    "containerLogs": {"enabled": True},
}


def core_addons(scope: Construct, *, cluster: eks.Cluster, kubernetes_version: str) -> list[eks.Addon]:
    """Networking, DNS and pod identity: what every node needs, installed before any node joins.

    Each overwrites EKS's self-managed copy (ResolveConflicts OVERWRITE, set by override as aws_eks_v2.Addon
    has no property; hubspoke/policy/hyperpod.py BOOTSTRAPPED_ADDONS gives the sources).
    """
    addons = []
    for name in CORE_ADDONS:
        addon = eks.Addon(
            scope,
            f"Addon-{name}",
            cluster=cluster,  # type: ignore[arg-type]  # jsii stub omits a Cluster member
            addon_name=name,
            addon_version=addon_version(name, kubernetes_version),
            preserve_on_delete=False,
        )
        cast(CfnResource, addon.node.default_child).add_property_override("ResolveConflicts", "OVERWRITE")
        addons.append(addon)
    return addons


class OperatorAddons(Construct):
    """cert-manager, the HyperPod training operator and CloudWatch observability: controllers on HyperPod nodes.

    Example::

        ops = OperatorAddons(self, "Operators", cluster=eks_cluster, kubernetes_version="1.33")
        ops.node.add_dependency(hyperpod_cluster)  # their pods need nodes to become ACTIVE
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: eks.Cluster, kubernetes_version: str):
        super().__init__(scope, construct_id)
        cert_manager = self._addon(cluster, CERT_MANAGER, kubernetes_version)
        operator_role = _pod_role(
            self,
            "TrainingOperatorRole",
            managed_policy="AmazonSageMakerHyperPodTrainingOperatorAccess",
            purpose="HyperPod training operator (HyperPodPyTorchJob controller)",
        )
        operator = self._addon(
            cluster,
            TRAINING_OPERATOR,
            kubernetes_version,
            role=operator_role,
            service_account=TRAINING_OPERATOR_SERVICE_ACCOUNT,
        )
        # The operator's webhooks need certificates: cert-manager first (training operator guide).
        operator.node.add_dependency(cert_manager)
        cloudwatch_role = _pod_role(
            self,
            "CloudWatchAgentRole",
            managed_policy="CloudWatchAgentServerPolicy",
            purpose="CloudWatch agent and Fluent Bit of the observability add-on",
        )
        self._addon(
            cluster,
            CLOUDWATCH_OBSERVABILITY,
            kubernetes_version,
            role=cloudwatch_role,
            service_account=CLOUDWATCH_SERVICE_ACCOUNT,
            configuration=CLOUDWATCH_CONFIGURATION,
        )

    def _addon(
        self,
        cluster: eks.Cluster,
        name: str,
        kubernetes_version: str,
        *,
        role: iam.IRole | None = None,
        service_account: str | None = None,
        configuration: dict[str, object] | None = None,
    ) -> eks.CfnAddon:
        associations = (
            [
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=role.role_arn, service_account=service_account
                )
            ]
            if role is not None and service_account is not None
            else None
        )
        return eks.CfnAddon(
            self,
            name,
            cluster_name=cluster.cluster_name,
            addon_name=name,
            addon_version=addon_version(name, kubernetes_version),
            pod_identity_associations=associations,
            configuration_values=json.dumps(configuration) if configuration else None,
            resolve_conflicts="OVERWRITE",
        )


def _pod_role(scope: Construct, construct_id: str, *, managed_policy: str, purpose: str) -> iam.Role:
    role = iam.Role(
        scope,
        construct_id,
        description=f"EKS Pod Identity role of the {purpose}",
        assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(managed_policy)],
    )
    acknowledge(
        role,
        "AwsSolutions-IAM4",
        reason=f"{managed_policy} is the AWS-maintained policy the add-on documentation names for the {purpose}; "
        "AWS updates it when the controller needs new actions, which a copy here would miss.",
        findings=[f"Policy::arn:<AWS::Partition>:iam::aws:policy/{managed_policy}"],
    )
    return role
