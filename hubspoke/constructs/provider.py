"""Custom-resource providers in the VPC, decided once: their Lambda runtime, log retention, HTTPS egress, the CDK
Provider framework in the VPC with its waiter logged and traced, and the acknowledgments every such provider needs.

The CNQ provisioner, nodes-ready waiter and chart installer use it, so a runtime bump or a new Control Tower
control is one edit. trace_waiter enables tracing on the framework's "waiter-state-machine" (aws-cdk-lib
2.275, provider-framework/waiter-state-machine.js, which has no option), as CT.STEPFUNCTIONS.PR.2 requires.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from hubspoke.policy.acks import acknowledge

# Every custom-resource Lambda of ours and the canary run on this Python; the CNQ bundle resolves its
# dependencies' markers for it (constructs/cnq/bundling.py).
LAMBDA_PYTHON = lambda_.Runtime.PYTHON_3_14
# A year: Control Tower's CT.CLOUDWATCH.PR.2 refuses log groups kept for less.
LOG_RETENTION = logs.RetentionDays.ONE_YEAR
LAMBDA_BASIC = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
LAMBDA_VPC = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
FRAMEWORK_RUNTIME = (
    "The function's runtime is chosen by aws-cdk-lib for its own handler code and moves with the pinned "
    "aws-cdk-lib version; none of our code runs in it."
)

# What a traced state machine's role needs, on "*": Step Functions Developer Guide, "IAM policies for AWS X-Ray"
# (xray-iam.html).
XRAY_ACTIONS = (
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
)
_UNSCOPED = (
    "The waiter's role writes traces (X-Ray's actions take no resource: Step Functions Developer Guide, 'IAM "
    "policies for AWS X-Ray') and delivers its logs (logs:CreateLogDelivery and the rest, which aws-cdk-lib grants "
    "on '*' as the guide's 'IAM policies for logging to CloudWatch Logs' does); it may invoke only its own "
    "isComplete and onTimeout functions."
)


def logical_id(construct: IConstruct) -> str:
    """The CloudFormation logical ID of `construct` (or of its default child) in its stack."""
    element = construct if isinstance(construct, CfnElement) else construct.node.default_child
    assert isinstance(element, CfnElement)
    return Stack.of(construct).get_logical_id(element)


def https_egress_group(
    scope: Construct,
    construct_id: str,
    *,
    vpc: ec2.IVpc,
    description: str,
    https_for: str,
    before: Sequence[tuple[ec2.IPeer, ec2.Port, str]] = (),
) -> ec2.SecurityGroup:
    """A provider's security group: nothing in, `before`'s rules and HTTPS to the AWS APIs out (nothing else)."""
    group = ec2.SecurityGroup(scope, construct_id, vpc=vpc, description=description, allow_all_outbound=False)
    for peer, port, why in before:
        group.add_egress_rule(peer, port, why)
    group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), https_for)
    return group


def vpc_provider(
    scope: Construct,
    construct_id: str,
    *,
    on_event: lambda_.IFunction,
    vpc: ec2.IVpc,
    subnets: Sequence[ec2.ISubnet],
    security_group: ec2.ISecurityGroup,
    is_complete: lambda_.IFunction | None = None,
    query_interval: Duration | None = None,
    total_timeout: Duration | None = None,
    log_group: logs.ILogGroup | None = None,
    waiter_logs: cr.LogOptions | None = None,
) -> cr.Provider:
    """The CDK Provider framework with its own functions in the VPC (Control Tower CT.LAMBDA.PR.3); with
    `is_complete`, its waiter state machine logged to `waiter_logs` and traced (trace_waiter)."""
    waits = is_complete is not None
    assert not waits or waiter_logs is not None, "a waiter without logs: give waiter_logs"
    provider = cr.Provider(
        scope,
        construct_id,
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=query_interval,
        total_timeout=total_timeout,
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
        security_groups=[security_group],
        log_group=log_group,
        # aws-cdk-lib leaves the waiter's logging off unless told otherwise, whatever the log options say.
        disable_waiter_state_machine_logging=False if waits else None,
        waiter_state_machine_log_options=waiter_logs,
    )
    if is_complete is not None:
        trace_waiter(provider)
    return provider


def acknowledge_provider_framework(provider: IConstruct, *, handler: IConstruct) -> None:
    """The CDK provider framework's onEvent function, which may invoke only `handler`."""
    acknowledge(
        provider,
        "AwsSolutions-IAM4",
        reason="The provider framework's role has only the Lambda basic and VPC access policies: writing "
        "its own logs and, in a VPC, managing its network interfaces.",
        findings=[LAMBDA_BASIC, LAMBDA_VPC],
    )
    acknowledge(
        provider,
        "AwsSolutions-IAM5",
        reason="The provider framework may invoke exactly one function; ':*' covers that function's "
        "versions and aliases only.",
        findings=[f"Resource::<{logical_id(handler)}.Arn>:*"],
    )
    acknowledge(provider, "AwsSolutions-L1", reason=FRAMEWORK_RUNTIME)


def trace_waiter(provider: cr.Provider) -> None:
    """Turn on X-Ray tracing of `provider`'s waiter state machine and let its role write the traces."""
    waiter = provider.node.find_child("waiter-state-machine")
    machine = waiter.node.find_child("Resource")
    role = waiter.node.find_child("Role")
    assert isinstance(machine, sfn.CfnStateMachine) and isinstance(role, iam.Role)
    machine.tracing_configuration = sfn.CfnStateMachine.TracingConfigurationProperty(enabled=True)
    # The state machine already depends on the role construct, its default policy included.
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(XRAY_ACTIONS), resources=["*"]))
    acknowledge(waiter, "AwsSolutions-IAM5", reason=_UNSCOPED, findings=["Resource::*"])
    acknowledge(waiter, "CKV_AWS_111", reason=_UNSCOPED, resource_types=["AWS::IAM::Policy"])
