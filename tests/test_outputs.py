"""The outputs the CLI reads, every name pinned; the reads between stacks, CDK's weak references, all resolvable.

The CLI and the runbooks read outputs by name, so a rename breaks them: the names below are written out, not
imported, so changing one is a reviewed edit of this file. Stacks read each other through CDK: each use of
another stack's attribute becomes Fn::GetStackOutput of an output CDK adds under the producer's "Publish"
scope (aws-cdk-lib 2.275, core/lib/private/refs.js createGetStackOutput: scope "Publish", id "Output" + the
resolved reference), in the producer's Region, with a reader role in the producer's account when the accounts
differ (README, "Reference strength").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.outputs import AssemblyMissing, assembly_templates, produced, readers, references
from hubspoke.topology import plan_stacks
from tests.conftest import Shape, get_stack_outputs, synth, synth_warnings

NETWORK = {"VpcId", "PeerPathSecurityGroupId"}
# CDK's own outputs for weak references (refs.js above): logical IDs under the producer's "Publish" scope.
CDK_OUTPUT_PREFIX = "PublishOutput"
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


def named_outputs(template: dict[str, Any]) -> set[str]:
    return {k for k in template.get("Outputs", {}) if not k.startswith(CDK_OUTPUT_PREFIX)}


def test_every_stack_outputs_exactly_the_contract(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for plan in plan_stacks(config):
        have = named_outputs(templates[plan.id])
        assert have == expected_outputs(config, plan.kind, plan.region), plan.id
        assert set(produced(config, plan)) == have, plan.id


def test_every_read_names_an_output_of_its_producer_in_its_region_and_every_cdk_output_is_read(
    shape: Shape,
) -> None:
    config, templates = shape.config, shape.templates
    by_name = {p.name: p for p in plan_stacks(config)}
    read: set[tuple[str, str]] = set()
    for plan in plan_stacks(config):
        for ref in get_stack_outputs(templates[plan.id]):
            producer = by_name[ref["StackName"]]
            assert ref["OutputName"] in templates[producer.id]["Outputs"], (
                f"{plan.id} reads a missing output {ref}"
            )
            # A stack name is unique per account and Region only: the read must name the producer's Region.
            assert ref["Region"] == producer.region, ref
            assert ref["OutputName"].startswith(CDK_OUTPUT_PREFIX), (
                f"{plan.id} reads a CLI output by hand: {ref}"
            )
            read.add((producer.id, ref["OutputName"]))
    made = {(p.id, k) for p in plan_stacks(config) for k in templates[p.id].get("Outputs", {})}
    assert {m for m in made if m[1].startswith(CDK_OUTPUT_PREFIX)} == read
    assert {(r.producer, r.output) for r in references(config, templates)} == read


def test_cross_account_reads_assume_a_role_the_producer_account_trusts_them_with(
    shape: Shape,
) -> None:
    """Fn::GetStackOutput's RoleArn: a role with cloudformation:DescribeStacks on the referenced stack, assumable
    by the execution role of the stack being deployed (CloudFormation Template Reference, "Fn::GetStackOutput").
    CDK's bootstrap names that execution role cdk-hnb659fds-cfn-exec-role-<account>-<Region> (CDK guide,
    "Bootstrapping", default qualifier hnb659fds)."""
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
            assert account == producer.account and holder == producer.id, f"{name} must live in the producer"
            consumer_role = (
                f":iam::{plan.account}:role/cdk-hnb659fds-cfn-exec-role-{plan.account}-{plan.region}"
            )
            assert consumer_role in json.dumps(props["AssumeRolePolicyDocument"]), name
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


def write_assembly(root: Path, stage: str, templates: dict[str, dict[str, Any]]) -> Path:
    """A cloud assembly as `cdk synth` writes it for a Stage (cloud-assembly-schema: the root manifest names a
    cdk:cloud-assembly artifact; its directory's manifest.json lists aws:cloudformation:stack artifacts with
    templateFile and displayName "<stage>/<stack id>")."""
    nested = root / f"assembly-{stage}"
    nested.mkdir(parents=True)
    artifacts = {}
    for sid, template in templates.items():
        (nested / f"{sid}.template.json").write_text(json.dumps(template))
        artifacts[sid.replace("-", "")] = {
            "type": "aws:cloudformation:stack",
            "displayName": f"{stage}/{sid}",
            "properties": {"templateFile": f"{sid}.template.json"},
        }
    (nested / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": artifacts}))
    return root


def test_readers_name_what_to_redeploy_after_a_producer_changes(
    dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    assembly = write_assembly(tmp_path, "hubspoke-dev", synth(dev_config))
    assert set(assembly_templates(dev_config, assembly)) == {p.id for p in plan_stacks(dev_config)}
    table = readers(dev_config, assembly)
    # The hub's volumes, the spoke's portal and its canary read the hub's floating IPs: all three must be
    # redeployed when they change.
    assert set(table["storage-us-east-2"]) == {"compute-us-east-2", "storage-us-west-2", "ops-us-west-2"}
    [ops] = table["storage-us-east-2"]["ops-us-west-2"]
    assert ops.carries.startswith("CnqFloatingIps") and ops.carries.endswith(".Addresses")
    # The Link stack reads the hub network's route tables and security group, and the spoke's peering.
    [peering] = table["network-us-west-2"]["link-us-west-2"]
    assert peering.carries.startswith("PeeringToHub")
    hub_reads = sorted(r.carries for r in table["network-us-east-2"]["link-us-west-2"])
    assert len(hub_reads) == 3 and hub_reads[0].startswith("NetworkPrivateRoutesuse2az1")
    assert hub_reads[2].startswith("PeerPath") and hub_reads[2].endswith(".GroupId")
    assert "dashboard-us-east-2" not in {c for by in table.values() for c in by}, "metrics are read by name"


def test_without_a_synthesized_assembly_readers_say_to_synthesize(
    dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    with pytest.raises(AssemblyMissing, match=r"assembly-hubspoke-dev/manifest.json: .* run `npx cdk synth"):
        readers(dev_config, tmp_path)


def test_synth_leaves_no_unacknowledged_warning(shape: Shape) -> None:
    """A warning nobody reads buries the one that matters: each is fixed or acknowledged with its reason."""
    config = shape.config
    assert synth_warnings(config) == []
