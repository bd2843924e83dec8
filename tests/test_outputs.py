"""The output contract between stacks: every name pinned, every cross-stack read declared and nothing else.

Consumers read outputs by name with Fn::GetStackOutput, and a deployed consumer keeps reading the name it was
deployed with (CloudFormation User Guide, "Fn::GetStackOutput": resolved when the consuming stack is created
or updated). A rename here is therefore a breaking change to deployed environments: the names below are
written out, not imported, so changing one is a reviewed edit of this file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.outputs import Reference, consumers, produced, references
from hubspoke.topology import plan_stacks
from tests.conftest import Shape, get_stack_outputs, synth_warnings

NETWORK = {"VpcId", "PeerPathSecurityGroupId", "AcceleratorSubnetId", "FlowLogGroupName"}
STORAGE = {"FloatingIps", "RestAddress", "AdminSecretArn"}
COMPUTE = {
    "EksClusterName",
    "HyperPodClusterArn",
    "EksEndpoint",
    "TrainingImageRepositoryUri",
    "ModelExportBucket",
}
# Only where the SSM access host is deployed (access.access_host, default: when administrators are listed).
ACCESS_HOST = "AccessHostInstanceId"


def expected_outputs(config: HubSpokeConfig, kind: str, region: str) -> set[str]:
    """The contract, spelled out per stack kind (per-AZ outputs end in the AZ ID in CamelCase)."""
    if kind == "network":
        # No shape pins the accelerator outside az_ids, so route tables and private subnets share the AZs.
        azs = list(config.region_config(region).resolved_az_ids)
        camel = {"use2-az1": "Use2Az1", "use2-az2": "Use2Az2", "usw2-az1": "Usw2Az1", "usw2-az2": "Usw2Az2",
                 "use1-az1": "Use1Az1", "use1-az2": "Use1Az2", "euw1-az1": "Euw1Az1", "euw1-az2": "Euw1Az2",
                 "apne1-az1": "Apne1Az1", "apne1-az2": "Apne1Az2", "euc1-az1": "Euc1Az1", "euc1-az2": "Euc1Az2"}  # fmt: skip
        names = set(NETWORK)
        names |= {f"PrivateRouteTable{camel[az]}" for az in azs}
        names |= {f"PrivateSubnet{camel[az]}" for az in azs}
        if region != config.hub.region:
            names.add("PeeringConnectionId")
        return names
    if kind == "compute" and config.access.host_enabled:
        return COMPUTE | {ACCESS_HOST}
    if kind == "storage" and region == config.hub.region and config.dataset.source_buckets:
        # Read by `hubspoke dataset load` (docs/datasets.md): the Shift user and the loader's Qumulo login.
        return STORAGE | {"ShiftUserName", "LoaderSecretArn"}
    if kind == "storage" and region != config.hub.region:
        return STORAGE | {"PrewarmSecretArn"}  # the prewarm Job's login (docs/runbooks/cache-warm-up.md)
    return {"storage": STORAGE, "compute": COMPUTE}.get(kind, set())


def test_every_stack_outputs_exactly_the_contract(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for plan in plan_stacks(config):
        have = set(templates[plan.id].get("Outputs", {}))
        assert have == expected_outputs(config, plan.kind, plan.region), plan.id
        assert set(produced(config, plan)) == have, plan.id


def test_templates_read_exactly_the_declared_references(shape: Shape) -> None:
    """Every Fn::GetStackOutput in every template is declared in hubspoke.outputs, and every declaration is read."""
    config, templates = shape.config, shape.templates
    by_name = {p.name: p for p in plan_stacks(config)}
    read: set[Reference] = set()
    for plan in plan_stacks(config):
        for ref in get_stack_outputs(templates[plan.id]):
            producer = by_name[ref["StackName"]]
            assert ref["OutputName"] in produced(config, producer), f"{plan.id} reads a missing output {ref}"
            # Same Region: no Region key; another Region: the producer's, as CloudFormation needs it.
            assert ref.get("Region", plan.region) == producer.region, ref
            read.add(Reference(plan.id, producer.id, ref["OutputName"]))
    assert read == set(references(config))


def test_cross_account_reads_assume_a_role_the_producer_account_trusts_them_with(
    shape: Shape,
) -> None:
    config, templates = shape.config, shape.templates
    by_name = {p.name: p for p in plan_stacks(config)}
    roles = {  # role name -> (account it lives in, its properties, the stack that holds it)
        r["Properties"]["RoleName"]: (p.account, r["Properties"], p.id)
        for p in plan_stacks(config)
        for r in templates[p.id]["Resources"].values()
        if r["Type"] == "AWS::IAM::Role" and isinstance(r["Properties"].get("RoleName"), str)
    }
    crossed = 0
    for plan in plan_stacks(config):
        for ref in get_stack_outputs(templates[plan.id]):
            producer = by_name[ref["StackName"]]
            if producer.account == plan.account:
                assert "RoleArn" not in ref, ref
                continue
            crossed += 1
            arn = json.dumps(ref["RoleArn"])
            [name] = [n for n in roles if f":iam::{producer.account}:role/{n}" in arn]
            account, props, holder = roles[name]
            assert account == producer.account, f"{name} must live in the producer's account"
            assert f":iam::{plan.account}:root" in json.dumps(props["AssumeRolePolicyDocument"]), name
            # ...and may describe the producer's stack (Fn::GetStackOutput's RoleArn needs
            # cloudformation:DescribeStacks on the referenced stack: CloudFormation Template Reference).
            granted = [
                json.dumps(statement["Resource"])
                for policy in [*props.get("Policies", []), *attached_policies(templates[holder], name)]
                for statement in policy["PolicyDocument"]["Statement"]
                if "cloudformation:DescribeStacks" in json.dumps(statement["Action"])
            ]
            assert any(f":stack/{producer.name}/*" in g for g in granted), (name, producer.name)
    accounts = {config.account_of(r) for r in config.regions()}
    assert (crossed > 0) == (len(accounts) > 1)


def attached_policies(template: dict[str, Any], role_name: str) -> list[dict[str, Any]]:
    """AWS::IAM::Policy resources of `template` attached to the role named `role_name`."""
    logical = {k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role"
               and r["Properties"].get("RoleName") == role_name}  # fmt: skip
    return [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        and any(ref.get("Ref") in logical for ref in r["Properties"]["Roles"])
    ]


def test_consumers_name_what_to_redeploy_after_a_producer_changes(dev_config: HubSpokeConfig) -> None:
    table = consumers(dev_config)
    # The hub's volumes, the spoke's portal and its canary read the hub's floating IPs: all three must be
    # redeployed when they change.
    assert set(table["storage-us-east-2"]) == {"compute-us-east-2", "storage-us-west-2", "ops-us-west-2"}
    assert table["storage-us-east-2"]["ops-us-west-2"] == ("FloatingIps",)
    # The Link stack reads the hub network's route tables and security group, and the spoke's peering.
    assert table["network-us-west-2"]["link-us-west-2"] == ("PeeringConnectionId",)
    assert set(table["network-us-east-2"]["link-us-west-2"]) == {
        "PeerPathSecurityGroupId",
        "PrivateRouteTableUse2Az1",
        "PrivateRouteTableUse2Az2",
    }
    assert "dashboard-us-east-2" not in {c for by in table.values() for c in by}, "metrics are read by name"


def test_an_undeclared_read_is_refused(dev_config: HubSpokeConfig) -> None:
    from aws_cdk import App, Stage

    from hubspoke.outputs import FLOW_LOG_GROUP
    from hubspoke.stacks.base import PlannedStack
    from hubspoke.stacks.wiring import Inputs

    [plan] = [p for p in plan_stacks(dev_config) if p.id == "compute-us-west-2"]
    stack = PlannedStack(Stage(App(), "env"), plan.id, plan=plan, purpose="test")
    inputs = Inputs(stack, config=dev_config)
    # The Compute stack has no business with the flow logs: reading them would be an unreviewed new edge.
    with pytest.raises(ValueError, match="does not declare"):
        inputs.read("network-us-west-2", FLOW_LOG_GROUP)


def test_synth_leaves_no_unacknowledged_warning(shape: Shape) -> None:
    """A warning nobody reads buries the one that matters: each is fixed or acknowledged with its reason."""
    config = shape.config
    assert synth_warnings(config) == []
