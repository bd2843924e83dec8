"""The CDK Provider framework's waiter state machine, traced with X-Ray as Control Tower's CT.STEPFUNCTIONS.PR.2 asks.

aws-cdk-lib 2.275's Provider builds the waiter that polls `is_complete` (custom-resources/lib/provider-framework/
waiter-state-machine.js) as a child "waiter-state-machine" holding a CfnStateMachine "Resource" and the "Role" it
runs as, and offers no tracing option. An account whose Control Tower hooks enforce CT.STEPFUNCTIONS.PR.2 refuses
a state machine without `TracingConfiguration.Enabled`, so this sets it on the framework's resource.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr

from hubspoke.policy.acks import acknowledge

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
