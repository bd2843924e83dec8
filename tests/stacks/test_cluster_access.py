"""Who reaches the private EKS endpoint, and how (issue 23 item 1): access entries for config.access.administrators
and the SSM access host with exactly one way in, as the compute templates carry them."""

from __future__ import annotations

from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.outputs import produced
from hubspoke.topology import plan_stacks
from tests.conftest import Shape, minimal, resources

# EKS User Guide, "Review access policy permissions": access policy ARNs are
# arn:<partition>:eks::aws:cluster-access-policy/<name>; AmazonEKSClusterAdminPolicy is the cluster-admin one.
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
ADMIN = "arn:aws:iam::123456789012:role/hubspoke-dev-cluster-admins"


def compute_templates(shape: Shape) -> dict[str, dict[str, Any]]:
    return {p.region: shape.templates[p.id] for p in plan_stacks(shape.config) if p.kind == "compute"}


def in_aws(value: Any) -> Any:
    """A Fn::Join over AWS::Partition as it resolves in the aws partition."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join("aws" if p == {"Ref": "AWS::Partition"} else p for p in value["Fn::Join"][1])
    return value


def test_dev_lists_an_administrator_for_every_compute_cluster(dev_config: HubSpokeConfig) -> None:
    """config/dev.yaml is the reference deploy: someone must be able to administer what it deploys."""
    assert dev_config.access.administrators == [ADMIN]
    assert dev_config.access.host_enabled


def test_each_administrator_gets_a_standard_cluster_admin_entry(shape: Shape) -> None:
    """EKS User Guide, "Create access entries": one entry per principal, type STANDARD for people (it may name a
    principal in another account); "Associate access policies with access entries": cluster scope for the
    cluster-admin policy. Fails if an administrator is dropped, namespaced or given another policy."""
    for code, template in compute_templates(shape).items():
        people = {
            e["Properties"]["PrincipalArn"]: e["Properties"]
            for _, e in resources(template, "AWS::EKS::AccessEntry")
            if isinstance(e["Properties"]["PrincipalArn"], str)
        }
        assert sorted(people) == sorted(shape.config.access.administrators), code
        for arn, entry in people.items():
            assert entry["Type"] == "STANDARD", f"{code}: {arn}"
            [policy] = entry["AccessPolicies"]
            assert policy["AccessScope"] == {"Type": "cluster"}, f"{code}: {arn}"
            assert in_aws(policy["PolicyArn"]) == CLUSTER_ADMIN, f"{code}: {arn}"


def host_parts(template: dict[str, Any]) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    [(host_id, host)] = resources(template, "AWS::EC2::Instance")
    [group] = host["Properties"]["NetworkInterfaces"][0]["GroupSet"]
    group_id = group["Fn::GetAtt"][0]
    return host_id, host["Properties"], group_id, template["Resources"][group_id]["Properties"]


def test_access_host_is_private_imdsv2_encrypted_and_ssm_managed(dev_templates: dict[str, Any]) -> None:
    """The host Session Manager forwards through: no public address, no key pair (Session Manager needs no
    inbound port or SSH key: Systems Manager User Guide, "AWS Systems Manager Session Manager"), IMDSv2 only
    (EC2 User Guide, "Use IMDSv2": HttpTokens required), an encrypted root volume, and an instance profile with
    AmazonSSMManagedInstanceCore ("Configure instance permissions required for Systems Manager"). The subnet
    places it: an AvailabilityZone holding an AZ ID would fail at deploy (AWS::EC2::Instance wants a name)."""
    for code in ("us-east-2", "us-west-2"):
        template = dev_templates[f"compute-{code}"]
        _, host, _, _ = host_parts(template)
        assert host["MetadataOptions"]["HttpTokens"] == "required", code
        [nic] = host["NetworkInterfaces"]
        assert nic["AssociatePublicIpAddress"] is False, code
        assert "KeyName" not in host and "AvailabilityZone" not in host, code
        assert all(d["Ebs"]["Encrypted"] is True for d in host["BlockDeviceMappings"]), code
        profile = template["Resources"][host["IamInstanceProfile"]["Ref"]]["Properties"]
        [role] = profile["Roles"]
        policies = template["Resources"][role["Ref"]]["Properties"]["ManagedPolicyArns"]
        assert [in_aws(p) for p in policies] == ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"], code
        parameter = template["Parameters"][host["ImageId"]["Ref"]]
        # Amazon Linux 2023 ships the SSM Agent; t4g.nano is Graviton, so the arm64 image.
        assert parameter["Default"].startswith("/aws/service/ami-amazon-linux-latest/al2023-ami-"), code
        assert parameter["Default"].endswith("-arm64"), code
        assert host["InstanceType"] == "t4g.nano", code


def test_the_only_way_in_is_the_host_group_to_the_cluster_group_on_443(dev_templates: dict[str, Any]) -> None:
    """EKS User Guide, "Accessing a private only API server": the control plane security group must admit port
    443 from the host. Exactly one new rule does, from the host's group to the cluster security group EKS puts on
    the endpoint's interfaces; the host's own group admits nothing and sends only 443 (SSM Agent and the API)."""
    for code in ("us-east-2", "us-west-2"):
        template = dev_templates[f"compute-{code}"]
        _, _, group_id, group = host_parts(template)
        assert "SecurityGroupIngress" not in group, code
        assert [(e["IpProtocol"], e["FromPort"], e["ToPort"]) for e in group["SecurityGroupEgress"]] == [
            ("tcp", 443, 443)
        ], code
        rules = [r["Properties"] for _, r in resources(template, "AWS::EC2::SecurityGroupIngress")]
        from_host = [
            p for p in rules if p.get("SourceSecurityGroupId") == {"Fn::GetAtt": [group_id, "GroupId"]}
        ]
        assert len(from_host) == 1, code
        [rule] = from_host
        [(cluster_id, _)] = resources(template, "AWS::EKS::Cluster")
        assert rule["GroupId"] == {"Fn::GetAtt": [cluster_id, "ClusterSecurityGroupId"]}, code
        assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443), code
        assert not [p for p in rules if p.get("GroupId") == {"Fn::GetAtt": [group_id, "GroupId"]}], code


def test_compute_publishes_what_connect_reads(dev_templates: dict[str, Any]) -> None:
    """`hubspoke connect` reads the endpoint and the host's instance ID from the stack, by their contract names."""
    outputs = dev_templates["compute-us-west-2"]["Outputs"]
    assert outputs["EksEndpoint"]["Value"]["Fn::GetAtt"][1] == "Endpoint"
    [(host_id, _)] = resources(dev_templates["compute-us-west-2"], "AWS::EC2::Instance")
    assert outputs["AccessHostInstanceId"]["Value"] == {"Ref": host_id}


@pytest.mark.parametrize(
    ("access", "host"),
    [
        ({}, False),
        ({"administrators": [ADMIN]}, True),
        ({"administrators": [ADMIN], "access_host": False}, False),
    ],
)
def test_the_host_is_on_when_administrators_are_listed_unless_switched_off(
    config_from: Any, access: dict[str, Any], host: bool
) -> None:
    """README, Configuration: access.access_host defaults to on when administrators are listed; the output
    contract carries AccessHostInstanceId only then (a stack without the host has no such output)."""
    data = minimal()
    data["access"] = access
    config = config_from(data)
    assert config.access.host_enabled is host
    [plan] = [p for p in plan_stacks(config) if p.id == "compute-us-west-2"]
    assert ("AccessHostInstanceId" in produced(config, plan)) is host
    assert "EksEndpoint" in produced(config, plan)


@pytest.mark.thorough
@pytest.mark.parametrize(("instance_type", "arch"), [("c7g.medium", "arm64"), ("t3.nano", "x86_64")])
def test_other_host_types_get_their_image_and_pass_control_tower(
    config_from: Any, instance_type: str, arch: str
) -> None:
    """Every offered type synthesizes, Control Tower included (every synth runs it): c7g.medium is on
    CT.EC2.PR.19's list of types that encrypt traffic between instances (ct-ec2-pr-19.guard in
    cdklabs-cdk-validator-cfnguard 0.0.62), t3.nano passes with the acknowledgment. The image follows the type's
    CPU: Graviton arm64, t3 x86_64 (an arm64 image on t3 would not boot)."""
    from tests.conftest import synth

    data = minimal()
    data["access"] = {"administrators": [ADMIN], "access_host_instance_type": instance_type}
    template = synth(config_from(data))["compute-us-west-2"]
    [(_, host)] = resources(template, "AWS::EC2::Instance")
    assert host["Properties"]["InstanceType"] == instance_type
    assert template["Parameters"][host["Properties"]["ImageId"]["Ref"]]["Default"].endswith(f"-{arch}")


@pytest.mark.thorough
def test_removing_or_reordering_administrators_keeps_each_remaining_entry(tmp_path: Any) -> None:
    """EKS User Guide, "Create access entries": an entry's principal cannot change and a principal has one entry.
    An entry whose logical ID followed its place in the list would be replaced (CloudFormation creates the
    replacement first) when an earlier administrator is removed or the list reordered, and EKS would refuse the
    second entry for the same principal: every remaining administrator keeps its logical ID."""
    from hubspoke.config import load
    from tests.conftest import synth, write_config

    other = "arn:aws:iam::123456789012:role/hubspoke-dev-oncall"

    def entry_ids(admins: list[str], name: str) -> dict[str, str]:
        data = minimal()
        data["access"] = {"administrators": admins}
        templates = synth(load(write_config(tmp_path, data, name)).config)
        [compute] = [t for sid, t in templates.items() if sid == "compute-us-west-2"]
        return {
            e["Properties"]["PrincipalArn"]: logical
            for logical, e in resources(compute, "AWS::EKS::AccessEntry")
            if isinstance(e["Properties"]["PrincipalArn"], str)
        }

    both = entry_ids([ADMIN, other], "both.yaml")
    assert entry_ids([other], "one.yaml") == {other: both[other]}
    assert entry_ids([other, ADMIN], "swapped.yaml") == both
