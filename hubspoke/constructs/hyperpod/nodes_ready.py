"""Resources that complete when a HyperPod cluster's nodes are launched, then Running: what node-bound add-ons wait for."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from hubspoke.constructs.hyperpod.nag import LAMBDA_BASIC, acknowledge_provider_framework, logical_id
from hubspoke.policy.acks import acknowledge

RUNTIME_DIR = Path(__file__).parent / "runtime"
# CloudFormation waits at most 3600 s for a custom resource's answer (AWS::CloudFormation::CustomResource,
# ServiceTimeout: 1 to 3600 seconds, default 3600), and aws-cdk-lib 2.275's Provider says of totalTimeout "The
# maximum timeout is 1 hour" (custom-resources/lib/provider-framework/provider.d.ts). Set explicitly here.
SERVICE_TIMEOUT = Duration.hours(1)
# The waiter polls for 55 minutes at most (55 attempts, one a minute), ending before the service timeout so
# that the failure CloudFormation shows is the provider's "Operation timed out", not a lost answer; the 5
# minutes left cover the onEvent call and each isComplete invocation's own run time (about a second).
WAIT = Duration.minutes(55)
POLL = Duration.minutes(1)
# One wait of 55 minutes may be too short for a p5 node: its launch (retried by continuous provisioning when
# capacity is short), the lifecycle script, then on-start deep health checks InstanceStress (DCGM
# diagnostics at level 4: the dcgmi diag reference gives level 3 about 15 minutes and level 4 as "extended,
# longer-running") and InstanceConnectivity (NCCL tests across nodes; SageMaker developer guide, "Deep health
# checks"). So two resources wait in turn, each with its own hour: every node launched (past Pending), then
# every node Running. The stack waits at most 2 x 55 minutes (plus the polls' run time) after the cluster.
PHASES = ("Launched", "Running")


class HyperPodNodesReady(Construct):
    """Completes once every instance group of `cluster` has `counts[group]` nodes launched, then Running.

    Example::

        ready = HyperPodNodesReady(self, "NodesReady", cluster=hp.cluster, counts={"workers": 2})
        operator_addon.node.add_dependency(ready)
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: sagemaker.CfnCluster, counts: Mapping[str, int]
    ) -> None:
        super().__init__(scope, construct_id)
        functions = {
            name: lambda_.Function(
                self,
                name,
                description=f"HyperPod nodes ready: {name}",
                runtime=lambda_.Runtime.PYTHON_3_14,
                handler=f"nodes_ready.{handler}",
                code=lambda_.Code.from_asset(str(RUNTIME_DIR), exclude=["__pycache__", "*.pyc"]),
                timeout=Duration.minutes(1),
                log_group=logs.LogGroup(self, f"{name}Logs", retention=logs.RetentionDays.THREE_MONTHS),
            )
            for name, handler in (("OnEvent", "on_event"), ("IsComplete", "is_complete"))
        }
        functions["IsComplete"].add_to_role_policy(
            iam.PolicyStatement(actions=["sagemaker:ListClusterNodes"], resources=[cluster.attr_cluster_arn])
        )
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=functions["OnEvent"],
            is_complete_handler=functions["IsComplete"],
            query_interval=POLL,
            total_timeout=WAIT,
            # aws-cdk-lib leaves the waiter's logging off unless told otherwise, whatever the log options say.
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=logs.LogGroup(self, "WaiterLogs", retention=logs.RetentionDays.THREE_MONTHS),
                level=sfn.LogLevel.ALL,
            ),
        )
        waits = [
            CustomResource(
                self,
                # "Resource" keeps the Running wait's logical ID what it was before the Launched wait existed.
                "Resource" if phase == "Running" else phase,
                service_token=provider.service_token,
                service_timeout=SERVICE_TIMEOUT,
                resource_type="Custom::HyperPodNodesReady",
                properties={
                    # ListClusterNodes takes the cluster's name or ARN; the ARN also orders this after the cluster.
                    "Cluster": cluster.attr_cluster_arn,
                    # One JSON string: CloudFormation passes property values to the handler as strings.
                    "InstanceGroups": json.dumps(dict(counts), sort_keys=True),
                    "Until": phase,
                },
            )
            for phase in PHASES
        ]
        waits[1].node.add_dependency(waits[0])  # each wait gets its own hour: they run one after the other
        self.launched, self.resource = waits
        acknowledge(
            self,
            "AwsSolutions-IAM4",
            reason="AWSLambdaBasicExecutionRole only lets the functions write their own logs.",
            findings=[LAMBDA_BASIC],
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
        acknowledge(
            waiter,
            "AwsSolutions-IAM5",
            reason="Step Functions log delivery (logs:CreateLogDelivery and friends) takes no resource-level "
            "permissions; aws-cdk-lib grants exactly the actions its waiter's logging needs.",
            findings=["Resource::*"],
        )
        acknowledge(
            waiter,
            "AwsSolutions-SF2",
            reason="aws-cdk-lib's provider framework builds this waiter without a tracing option; it only polls "
            "one Lambda every minute, and every step is logged (level ALL) to its log group.",
        )
