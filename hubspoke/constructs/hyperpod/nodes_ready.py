"""Resources that complete when a HyperPod cluster's nodes are launched, then Running: what node-bound add-ons wait for."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from hubspoke.constructs.provider import (
    LAMBDA_BASIC,
    LAMBDA_PYTHON,
    LAMBDA_VPC,
    LOG_RETENTION,
    acknowledge_provider_framework,
    https_egress_group,
    logical_id,
    vpc_provider,
)
from hubspoke.deploy_time import NODE_WAIT_MINUTES, node_wait_phases
from hubspoke.policy.acks import acknowledge

RUNTIME_DIR = Path(__file__).parent / "runtime"
# CloudFormation waits at most 3600 s for a custom resource's answer (AWS::CloudFormation::CustomResource,
# ServiceTimeout: 1 to 3600 seconds, default 3600), and aws-cdk-lib 2.275's Provider says of totalTimeout "The
# maximum timeout is 1 hour" (custom-resources/lib/provider-framework/provider.d.ts). Set explicitly here.
SERVICE_TIMEOUT = Duration.hours(1)
# Poll run time adds to the waiter's 55 one-minute attempts, so the handler keeps its own 55-minute budget
# (runtime/nodes_ready.py budget_left) and fails naming the missing nodes before the 60-minute service
# timeout.
WAIT = Duration.minutes(NODE_WAIT_MINUTES)
POLL = Duration.minutes(1)
# A p5 node's launch, lifecycle script and "about 2 hours" of deep health checks outlast one 55-minute wait
# (SageMaker developer guide, "Recommended resiliency configuration"), so resources wait in turn, an hour each
# (deploy_time.node_wait_phases; docs/decisions.md, "Node waits").


class HyperPodNodesReady(Construct):
    """Completes once every instance group of `cluster` has `counts[group]` nodes launched, then Running.

    With `deep_health_checks` (any group runs on-start checks), Checking waits sit between the two.

    Example::

        ready = HyperPodNodesReady(self, "NodesReady", cluster=hp.cluster, counts={"workers": 2},
                                   vpc=net.vpc, subnets=[net.accelerator_subnet], deep_health_checks=True)
        operator_addon.node.add_dependency(ready)

    Its functions (and the provider framework's) run in `subnets` (Control Tower CT.LAMBDA.PR.3), with HTTPS
    out only: SageMaker's ListClusterNodes, and the Lambda and Step Functions calls of the framework.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: sagemaker.CfnCluster,
        counts: Mapping[str, int],
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        deep_health_checks: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        egress = https_egress_group(
            self,
            "Egress",
            vpc=vpc,
            description="HyperPod nodes-ready waiter: HTTPS out to AWS APIs",
            https_for="AWS APIs (SageMaker, Lambda, Step Functions)",
        )
        placement = ec2.SubnetSelection(subnets=list(subnets))
        functions = {
            name: lambda_.Function(
                self,
                name,
                description=f"HyperPod nodes ready: {name}",
                runtime=LAMBDA_PYTHON,
                handler=f"nodes_ready.{handler}",
                code=lambda_.Code.from_asset(str(RUNTIME_DIR), exclude=["__pycache__", "*.pyc"]),
                timeout=Duration.minutes(1),
                log_group=logs.LogGroup(self, f"{name}Logs", retention=LOG_RETENTION),
                vpc=vpc,
                vpc_subnets=placement,
                security_groups=[egress],
            )
            for name, handler in (("OnEvent", "on_event"), ("IsComplete", "is_complete"))
        }
        functions["IsComplete"].add_to_role_policy(
            iam.PolicyStatement(actions=["sagemaker:ListClusterNodes"], resources=[cluster.attr_cluster_arn])
        )
        provider = vpc_provider(
            self,
            "Provider",
            on_event=functions["OnEvent"],
            is_complete=functions["IsComplete"],
            query_interval=POLL,
            total_timeout=WAIT,
            vpc=vpc,
            subnets=subnets,
            security_group=egress,
            waiter_logs=cr.LogOptions(
                destination=logs.LogGroup(self, "WaiterLogs", retention=LOG_RETENTION), level=sfn.LogLevel.ALL
            ),
        )
        waits: list[CustomResource] = []
        for phase in node_wait_phases(deep_health_checks):
            # "Resource" keeps the Running wait's logical ID what it was before the other waits existed; the
            # others are named after their phase ("Launched", "Checking1", ...), all passing `Until` without
            # the number and the number as `Step` (it tells their physical IDs apart).
            step = phase.removeprefix("Checking")
            checking = {"Until": "Checking", "Step": step} if phase != step else {"Until": phase}
            wait = CustomResource(
                self,
                "Resource" if phase == "Running" else phase,
                service_token=provider.service_token,
                service_timeout=SERVICE_TIMEOUT,
                resource_type="Custom::HyperPodNodesReady",
                properties={
                    # ListClusterNodes takes the cluster's name or ARN; the ARN also orders this after the cluster.
                    "Cluster": cluster.attr_cluster_arn,
                    # One JSON string: CloudFormation passes property values to the handler as strings.
                    "InstanceGroups": json.dumps(dict(counts), sort_keys=True),
                    **checking,
                    # The handler's own wall-clock budget, counted from onEvent: its polls' run time counts too,
                    # which the framework's retry count does not (runtime/nodes_ready.py, budget_left).
                    "WaitSeconds": str(int(WAIT.to_seconds())),
                },
            )
            if waits:
                wait.node.add_dependency(waits[-1])  # each wait gets its own hour: one after the other
            waits.append(wait)
        self.launched, self.resource = waits[0], waits[-1]
        self.checking = waits[1:-1]
        acknowledge(
            self,
            "AwsSolutions-IAM4",
            reason="AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole only let the functions write "
            "their own logs and manage their network interfaces in the VPC.",
            findings=[LAMBDA_BASIC, LAMBDA_VPC],
        )
        for function in functions.values():
            acknowledge_provider_framework(provider, handler=function)
        waiter = provider.node.find_child("waiter-state-machine")
        framework = [provider.node.find_child(f"framework-{step}") for step in ("isComplete", "onTimeout")]
        acknowledge(
            waiter,
            "AwsSolutions-IAM5",
            reason="The provider framework's waiter may invoke exactly its own isComplete and onTimeout "
            "functions; ':*' covers those functions' versions and aliases only.",
            findings=[f"Resource::<{logical_id(f)}.Arn>:*" for f in framework],
        )
