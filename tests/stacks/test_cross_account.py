"""The cross-account roles, judged against what AWS documents they need, for every topology shape.

A spoke in another account than the hub (docs/configuration.md, `.account`) needs two roles and nothing more:

- PeerAccess, in the hub account: CloudFormation in the spoke account accepts the peering into the hub VPC
  through it (AWS::EC2::VPCPeeringConnection `PeerRoleArn`: "required when you are peering a VPC in a
  different AWS account"; CloudFormation User Guide, "Walkthrough: Peer with a VPC in another AWS account":
  the accepter account's role trusts the requester account and allows ec2:AcceptVpcPeeringConnection).
- A reader role in each producer read from another account, which CDK adds for its weak references
  (aws-cdk-lib 2.275 README, "Reference strength"; core/lib/private/refs.js createGetStackOutputRole).

Fn::GetStackOutput (CloudFormation Template Reference): `RoleArn` is "an IAM role with
cloudformation:DescribeStacks permission on the referenced stack", which "must be assumable by the execution
role of the stack being created or updated": CDK trusts the reading stack's execution role, which the CDK
bootstrap names cdk-hnb659fds-cfn-exec-role-<account>-<Region> (CDK guide, "Bootstrapping").
Service Authorization Reference, Amazon EC2: AcceptVpcPeeringConnection requires both the `vpc` and the
`vpc-peering-connection` resource types; `ec2:AccepterVpc` and `ec2:RequesterVpc`, of type ARN, condition the
latter; the VPC Peering Guide ("Identity and access management for VPC peering") writes AccepterVpc with
ArnEquals and, in its example of accepting from a specific account, RequesterVpc on that account's VPC ARNs. Resource ARNs:
`arn:${Partition}:ec2:${Region}:${Account}:vpc/${VpcId}`, `...:vpc-peering-connection/${Id}` and
`arn:${Partition}:cloudformation:${Region}:${Account}:stack/${StackName}/${Id}` (same reference).

The expected values below are built from config and those documents; names of roles come from the templates
that use them (the peering's PeerRoleArn, the readers' RoleArn), never from hubspoke's own helpers.
"""

from __future__ import annotations

from typing import Any

from hubspoke.config import HubSpokeConfig, SpokeConfig
from hubspoke.topology import plan_stacks, stack_name
from tests.conftest import Shape, get_stack_outputs, synth_dependencies, upstream

PARTITION = "aws"  # every shape deploys to the commercial partition (AWS::Partition resolves to "aws")


def text(value: Any) -> str:
    """A template value as the string CloudFormation makes of it: partition resolved, weak references named."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(text(p) for p in parts)
    if value == {"Ref": "AWS::Partition"}:
        return PARTITION
    if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
        return value["Fn::Sub"].replace("${AWS::Partition}", PARTITION)
    if "Fn::GetStackOutput" in value:
        ref = value["Fn::GetStackOutput"]
        return f"<{ref['StackName']}.{ref['OutputName']}>"
    raise AssertionError(f"unexpected intrinsic in an IAM value: {value}")


def role_named(template: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    found = [
        (k, r["Properties"])
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role" and r["Properties"].get("RoleName") == name
    ]
    assert len(found) == 1, f"role {name}: {len(found)} in the template"
    return found[0]


def trusted_accounts(role: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(Effect, Action, principal ARN) of each trust statement; conditions would be reported as a mismatch."""
    statements = role["AssumeRolePolicyDocument"]["Statement"]
    assert all(set(s) == {"Action", "Effect", "Principal"} for s in statements), statements
    return [(s["Effect"], s["Action"], text(s["Principal"]["AWS"])) for s in statements]


def granted(template: dict[str, Any], logical_id: str, role: dict[str, Any]) -> set[tuple[Any, ...]]:
    """Every statement the role is given, inline or attached, as (Effect, actions, resource, condition)."""
    assert "ManagedPolicyArns" not in role and "PermissionsBoundary" not in role
    documents = [p["PolicyDocument"] for p in role.get("Policies", [])]
    documents += [
        r["Properties"]["PolicyDocument"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": logical_id} in r["Properties"]["Roles"]
    ]
    found = set()
    for doc in documents:
        for s in doc["Statement"]:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
            condition = {
                op: {key: text(v) for key, v in keys.items()} for op, keys in s.get("Condition", {}).items()
            }
            for resource in resources:
                found.add((s["Effect"], tuple(sorted(actions)), text(resource), repr(condition)))
    return found


def cross_account_spokes(config: HubSpokeConfig) -> list[SpokeConfig]:
    return [s for s in config.spokes if config.account_of(s) != config.account_of(config.hub)]


def test_only_spokes_in_another_account_get_the_two_roles(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    crossing = {s.region for s in cross_account_spokes(config)}
    assert {
        sid.removeprefix("peer-access-") for sid in templates if sid.startswith("peer-access-")
    } == crossing
    for spoke in config.spokes:
        named = [
            r["Properties"]["RoleName"]
            for r in templates[f"network-{spoke.region}"]["Resources"].values()
            if r["Type"] == "AWS::IAM::Role" and "RoleName" in r["Properties"]
        ]
        assert len(named) == (spoke.region in crossing), (spoke.region, named)


def test_each_reader_role_trusts_only_the_reading_stack_and_describes_only_its_own_stack(
    shape: Shape,
) -> None:
    config, templates = shape.config, shape.templates
    plans = {p.name: p for p in plan_stacks(config)}
    checked = 0
    for reader in plan_stacks(config):
        for ref in get_stack_outputs(templates[reader.id]):
            producer = plans[ref["StackName"]]
            if producer.account == reader.account:
                continue
            prefix = f"arn:{PARTITION}:iam::{producer.account}:role/"
            arn = text(ref["RoleArn"])
            assert arn.startswith(prefix), f"{reader.id} must assume a role in {producer.account}: {arn}"
            logical_id, role = role_named(templates[producer.id], arn.removeprefix(prefix))
            execution = (
                f"arn:{PARTITION}:iam::{reader.account}:role/cdk-hnb659fds-cfn-exec-role-{reader.account}"
            )
            [trust] = role["AssumeRolePolicyDocument"]["Statement"]
            assert (trust["Effect"], trust["Action"], set(trust)) == (
                "Allow", ["sts:AssumeRole"], {"Effect", "Action", "Principal"},
            )  # fmt: skip
            principals = trust["Principal"]["AWS"]
            trusted = {text(p) for p in (principals if isinstance(principals, list) else [principals])}
            assert f"{execution}-{reader.region}" in trusted, trusted
            # Only execution roles of the environment's other accounts' stacks, never a whole account.
            assert all(":role/cdk-hnb659fds-cfn-exec-role-" in t for t in trusted), trusted
            readable = (
                f"arn:{PARTITION}:cloudformation:{producer.region}:{producer.account}:stack/{producer.name}/*"
            )
            assert granted(templates[producer.id], logical_id, role) == {
                ("Allow", ("cloudformation:DescribeStacks",), readable, "{}")
            }
            checked += 1
    assert (checked > 0) == bool(cross_account_spokes(config))


def test_peer_access_accepts_only_into_the_hub_vpc(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    hub, hub_account = config.hub.region, config.account_of(config.hub)
    hub_network = stack_name(config, "network", hub)
    for spoke in cross_account_spokes(config):
        account = config.account_of(spoke)
        [(_, peering)] = [
            (k, r["Properties"])
            for k, r in templates[f"network-{spoke.region}"]["Resources"].items()
            if r["Type"] == "AWS::EC2::VPCPeeringConnection"
        ]
        assert (peering["PeerOwnerId"], peering["PeerRegion"]) == (hub_account, hub)
        role_arn = text(peering["PeerRoleArn"])
        prefix = f"arn:{PARTITION}:iam::{hub_account}:role/"
        assert role_arn.startswith(prefix), f"the peer role lives in the hub (accepter) account: {role_arn}"
        sid = f"peer-access-{spoke.region}"
        logical_id, role = role_named(templates[sid], role_arn.removeprefix(prefix))
        assert trusted_accounts(role) == [("Allow", "sts:AssumeRole", f"arn:{PARTITION}:iam::{account}:root")]

        # The hub VPC's ID, read through the output CDK gives the hub network for it (its value: the VPC's Ref).
        hub_template = templates[f"network-{hub}"]
        [vpc] = [k for k, r in hub_template["Resources"].items() if r["Type"] == "AWS::EC2::VPC"]
        [vpc_output] = [
            k
            for k, o in hub_template["Outputs"].items()
            if o["Value"] == {"Ref": vpc} and k.startswith("PublishOutput")  # CDK's weak-reference outputs
        ]
        hub_vpc = f"arn:{PARTITION}:ec2:{hub}:{hub_account}:vpc/<{hub_network}.{vpc_output}>"
        accept = ("ec2:AcceptVpcPeeringConnection",)
        assert granted(templates[sid], logical_id, role) == {
            ("Allow", accept, hub_vpc, "{}"),
            (
                "Allow",
                accept,
                f"arn:{PARTITION}:ec2:{hub}:{hub_account}:vpc-peering-connection/*",
                repr(
                    {
                        "ArnEquals": {"ec2:AccepterVpc": hub_vpc},
                        # The VPC Peering Guide's accept example: the requester VPC in the spoke's account (and
                        # here its Region; the VPC's own ID does not exist when the role is made).
                        "ArnLike": {
                            "ec2:RequesterVpc": f"arn:{PARTITION}:ec2:{spoke.region}:{account}:vpc/*"
                        },
                    }
                ),
            ),
        }


def test_a_cross_account_spoke_network_deploys_after_its_peer_access_stack(shape: Shape) -> None:
    """The peering's PeerRoleArn assumes the peer role when the spoke network is created, and the Link stack
    assumes the reader role CDK creates with the spoke network. CDK adds no stack dependency for a reference
    across accounts (refs.js resolveValue), so hubspoke.topology's must hold them: `cdk deploy` follows the
    cloud assembly's stack dependencies, so each must lead (directly or through others)."""
    config = shape.config
    after = upstream(synth_dependencies(config))
    hub_network = f"network-{config.hub.region}"
    for spoke in cross_account_spokes(config):
        access = f"peer-access-{spoke.region}"
        assert hub_network in after[access], "the role's policy names the hub VPC, read from the hub network"
        assert access in after[f"network-{spoke.region}"]
        assert f"network-{spoke.region}" in after[f"link-{spoke.region}"]
