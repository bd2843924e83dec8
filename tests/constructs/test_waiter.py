"""Every provider waiter in the dev templates is traced and may write its traces; every function is in a VPC.

Sources: Control Tower CT.STEPFUNCTIONS.PR.2 (cdklabs-cdk-validator-cfnguard 0.0.62, rules/control-tower/
cfn-guard/stepfunctions/ct-stepfunctions-pr-2.guard: `TracingConfiguration.Enabled` true); Step Functions
Developer Guide, "IAM policies for AWS X-Ray" (the four actions below, on "*"); CT.LAMBDA.PR.3 (a VpcConfig
with subnets and security groups).
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Templates

XRAY = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
}


def _resources(templates: Templates, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (name, logical_id, res)
        for name, t in templates.items()
        for logical_id, res in t.get("Resources", {}).items()
        if res["Type"] == kind
    ]


def _actions_on_role(template: dict[str, Any], role: str) -> set[str]:
    actions: set[str] = set()
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        if res["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in props.get("Roles", []):
            continue
        for statement in props["PolicyDocument"]["Statement"]:
            listed = statement["Action"]
            if statement["Effect"] == "Allow" and statement["Resource"] == "*":
                actions |= set(listed if isinstance(listed, list) else [listed])
    return actions


def test_every_state_machine_is_traced_by_a_role_that_may_write_traces(dev_templates: Templates) -> None:
    machines = _resources(dev_templates, "AWS::StepFunctions::StateMachine")
    # Storage (CNQ provisioner) and compute (HyperPod nodes ready) of both Regions.
    assert len(machines) == 4, [m[:2] for m in machines]
    for name, logical_id, res in machines:
        props = res["Properties"]
        assert props.get("TracingConfiguration") == {"Enabled": True}, (name, logical_id)
        role = props["RoleArn"]["Fn::GetAtt"][0]
        assert _actions_on_role(dev_templates[name], role) >= XRAY, (name, logical_id)


def test_every_function_runs_in_the_vpc(dev_templates: Templates) -> None:
    functions = _resources(dev_templates, "AWS::Lambda::Function")
    assert functions
    for name, logical_id, res in functions:
        vpc = res["Properties"].get("VpcConfig", {})
        assert vpc.get("SubnetIds") and vpc.get("SecurityGroupIds"), (name, logical_id)
