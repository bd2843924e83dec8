"""The HyperPod dependencies Helm chart, installed at deploy time from a pinned upstream commit (no vendoring)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from aws_cdk.lambda_layer_awscli import AwsCliLayer
from constructs import Construct

from hubspoke.constructs.hyperpod.eks import KubectlLayer
from hubspoke.constructs.provider import (
    LAMBDA_BASIC,
    LAMBDA_PYTHON,
    LAMBDA_VPC,
    LOG_RETENTION,
    acknowledge_provider_framework,
    vpc_provider,
)
from hubspoke.deploy_time import CHART_INSTALL_BOUND_MINUTES
from hubspoke.policy.acks import acknowledge

RUNTIME_DIR = Path(__file__).parent / "runtime"
# The chart lives in helm_chart/HyperPodHelmChart of aws/sagemaker-hyperpod-cli (SageMaker developer
# guide, "Installing packages on the Amazon EKS cluster using Helm"). Pinned to a commit, not a branch:
# the last commit touching the chart as of 2026-06-22. Bump deliberately; the runbook says how.
CHART_REPOSITORY = "aws/sagemaker-hyperpod-cli"
CHART_COMMIT = "a00b22d17ea928a6e39a43bd2efdafe01b1005ea"
CHART_PATH = "helm_chart/HyperPodHelmChart"
RELEASE = "hyperpod-dependencies"
# Without `health-monitoring-agent.region` the chart pulls from us-east-1 before any node exists
# (charts/health-monitoring-agent/templates/_helpers.tpl, "health-monitoring-agent.imageUri"); AWS's installer
# passes it (aws/sagemaker-hyperpod-cluster-setup, helm-chart-injector lambda_function.py).
HEALTH_AGENT = "health-monitoring-agent"


def chart_values(region: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values the chart is installed with: `extra`, and the health-monitoring agent's Region."""
    values = copy.deepcopy(dict(extra or {}))
    values.setdefault(HEALTH_AGENT, {})["region"] = region
    return values


def archive_url(repository: str = CHART_REPOSITORY, commit: str = CHART_COMMIT) -> str:
    return f"https://github.com/{repository}/archive/{commit}.tar.gz"


class HyperPodDependencies(Construct):
    """Installs the pinned HyperPod dependencies chart into `cluster`; the HyperPod cluster must wait for it.

    Example::

        deps = HyperPodDependencies(self, "Dependencies", cluster=eks_plane.cluster,
                                    subnets=net.private_subnets, security_group=sg)
        hyperpod.node.add_dependency(deps)
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.Cluster,
        subnets: Sequence[ec2.ISubnet],
        security_group: ec2.ISecurityGroup,
        values: Mapping[str, Any] | None = None,
        commit: str = CHART_COMMIT,
    ) -> None:
        super().__init__(scope, construct_id)
        log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION)
        self.function = lambda_.Function(
            self,
            "Installer",
            description=f"Installs the HyperPod dependencies chart at {CHART_REPOSITORY}@{commit[:12]}",
            runtime=LAMBDA_PYTHON,
            handler="dependencies.on_event",
            code=lambda_.Code.from_asset(str(RUNTIME_DIR), exclude=["__pycache__", "*.pyc"]),
            layers=[KubectlLayer(self, "KubectlLayer"), AwsCliLayer(self, "AwsCliLayer")],
            memory_size=1024,
            timeout=Duration.minutes(CHART_INSTALL_BOUND_MINUTES),
            # The endpoint is private: run next to it, in the group its ENIs carry (HyperPodEks), egress via NAT.
            vpc=cluster.vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[security_group],
            log_group=log_group,
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=[cluster.cluster_arn])
        )
        assert self.function.role is not None
        self.access = eks.AccessEntry(
            self,
            "Access",
            cluster=cluster,  # type: ignore[arg-type]  # jsii stub omits a Cluster member
            principal=self.function.role.role_arn,
            # The chart installs CRDs, cluster roles and DaemonSets across namespaces: cluster admin.
            access_policies=[
                eks.AccessPolicy.from_access_policy_name(
                    "AmazonEKSClusterAdminPolicy", access_scope_type=eks.AccessScopeType.CLUSTER
                )
            ],
        )
        # The framework's function runs beside the installer, in the VPC (Control Tower CT.LAMBDA.PR.3).
        provider = vpc_provider(
            self,
            "Provider",
            on_event=self.function,
            vpc=cluster.vpc,
            subnets=subnets,
            security_group=security_group,
        )
        self.resource = CustomResource(
            self,
            "Release",
            service_token=provider.service_token,
            resource_type="Custom::HyperPodDependencies",
            properties={
                "ClusterName": cluster.cluster_name,
                "Release": RELEASE,
                "Commit": commit,
                "ArchiveUrl": archive_url(commit=commit),
                "ChartPath": CHART_PATH,
                # One JSON string: CloudFormation passes property values to the handler as strings.
                "Values": json.dumps(chart_values(Stack.of(self).region, values), sort_keys=True),
            },
        )
        self.resource.node.add_dependency(self.access)
        _acknowledge(self, provider, self.function)


def _acknowledge(scope: Construct, provider: cr.Provider, function: lambda_.Function) -> None:
    acknowledge(
        scope,
        "AwsSolutions-IAM4",
        reason="AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole only allow writing the "
        "function's own logs and managing its VPC network interfaces, which a Lambda in a VPC needs.",
        findings=[LAMBDA_BASIC, LAMBDA_VPC],
    )
    acknowledge_provider_framework(provider, handler=function)
