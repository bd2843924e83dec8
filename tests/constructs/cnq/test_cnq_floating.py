"""Custom::CnqFloatingIps against moto's EC2: assigned when an interface is new, never reconciled per interface.

Qumulo Core moves floating IPs between the nodes' interfaces through the EC2 API (the node role's
AssignPrivateIpAddresses / UnassignPrivateIpAddresses, hubspoke/constructs/cnq/infrastructure.py); Qumulo's own
deployments let the provider's state win after create (qumulo-terraform-gcp @ a30b449c,
compute/module/sub-modules/qcluster/main.tf, ignore_changes includes network_interface).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hubspoke.constructs.cnq.runtime import floating
from hubspoke.constructs.cnq.runtime.provisioner import on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import ROOMY, World
from tests.fakes.ec2_addresses import draw_unused_addresses


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    draw_unused_addresses(monkeypatch)
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-2")


def _enis(ec2: Any, count: int) -> list[str]:
    vpc = ec2.create_vpc(CidrBlock="10.10.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.10.64.0/18")["Subnet"]["SubnetId"]
    return [ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"]["NetworkInterfaceId"]
            for _ in range(count)]  # fmt: skip


def _move(ec2: Any, address: str, source: str, target: str) -> None:
    """What Qumulo does at a failover: the address leaves one interface for another."""
    ec2.unassign_private_ip_addresses(NetworkInterfaceId=source, PrivateIpAddresses=[address])
    ec2.assign_private_ip_addresses(
        NetworkInterfaceId=target, PrivateIpAddresses=[address], AllowReassignment=True
    )


def test_new_interfaces_get_their_share_and_qumulos_moves_are_left_alone(ec2: Any) -> None:
    enis = _enis(ec2, 4)
    addresses = floating.converge(ec2, enis, [3, 3, 3, 3])
    assert len(addresses) == 12 and [len(a) for a in floating.held(ec2, enis).values()] == [3, 3, 3, 3]
    moved = floating.held(ec2, enis)[enis[0]][0]
    _move(ec2, moved, enis[0], enis[1])
    again = floating.converge(ec2, enis, [3, 3, 3, 3], old_ids=enis, old_total=12)
    assert again == addresses, "the same floating IPs, wherever Qumulo put them"
    assert [len(a) for a in floating.held(ec2, enis).values()] == [2, 4, 3, 3], "no interface set back"


@pytest.mark.parametrize(("counts", "shares"), [([3] * 6, [3, 3, 2, 4, 3, 3]), ([2] * 6, [3, 3, 2, 4, 0, 0])])
def test_added_nodes_get_what_the_total_lacks_and_the_others_keep_theirs(
    ec2: Any, counts: list[int], shares: list[int]
) -> None:
    """Without floating_ip_count every node brings 3 (18 for 6 nodes); with a stated total of 12 the two new
    nodes bring none: the total is the cluster's, and Qumulo spreads it. The counts the template now gives
    the first four (2 each) change nothing on them."""
    enis = _enis(ec2, 6)
    before = floating.converge(ec2, enis[:4], [3, 3, 3, 3])
    _move(ec2, floating.held(ec2, enis)[enis[2]][0], enis[2], enis[3])
    after = floating.converge(ec2, enis, counts, old_ids=enis[:4], old_total=12)
    assert set(before) <= set(after) and len(after) == sum(counts)
    assert [len(a) for a in floating.held(ec2, enis).values()] == shares


def test_a_lower_total_is_refused_outside_a_rollback(ec2: Any) -> None:
    enis = _enis(ec2, 4)
    floating.converge(ec2, enis, [3, 3, 3, 3])
    with pytest.raises(ProvisioningError, match="set floating_ip_count back to 12"):
        floating.converge(ec2, enis, [2, 2, 2, 2], old_ids=enis, old_total=12)
    assert (
        len(floating.converge(ec2, enis, [2, 2, 2, 2], old_ids=enis, old_total=12, rolling_back=True)) == 12
    )


def test_the_handler_answers_the_addresses_for_the_cluster_resource(world: World) -> None:
    """on_event assigns at once and answers Data.Addresses, which the cluster, its outputs and a spoke's
    portal read (Fn::GetAtt); the Provider framework merges onEvent's Data into the response (aws-cdk-lib
    2.275.0, custom-resources/lib/provider-framework/runtime/framework.js, isComplete)."""
    ec2 = boto3.client("ec2")
    enis = _enis(ec2, 4)
    props = {
        "ClusterName": "dev-hub",
        "NetworkInterfaceIds": enis,
        "Counts": ["3"] * 4,
        "WaitSeconds": "3000",
    }
    event = {"RequestType": "Create", "ResourceType": "Custom::CnqFloatingIps", "LogicalResourceId": "FloatingIps",
             "ResourceProperties": props, "StackId": world.stack_id}  # fmt: skip
    answer = on_event(event, ROOMY)
    addresses = answer["Data"]["Addresses"].split(",")
    assert len(addresses) == 12 and answer["PhysicalResourceId"] == "cnq-floating-dev-hub"
    update = {**event, "RequestType": "Update", "PhysicalResourceId": answer["PhysicalResourceId"],
              "OldResourceProperties": props}  # fmt: skip
    world.stack_status("UPDATE_IN_PROGRESS")
    assert on_event(update, ROOMY)["Data"]["Addresses"].split(",") == addresses


def _old_release(ec2: Any, count: int, per_node: int) -> tuple[list[str], str]:
    """Interfaces as the release before Custom::CnqFloatingIps made them (SecondaryPrivateIpAddressCount on
    each AWS::EC2::NetworkInterface) and its FloatingIps output: each interface's SecondaryPrivateIpAddresses
    joined, interface by interface (that release's infrastructure.py: Fn::Join of Fn::Join per interface)."""
    vpc = ec2.create_vpc(CidrBlock="10.10.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.10.64.0/18")["Subnet"]["SubnetId"]
    made = [ec2.create_network_interface(SubnetId=subnet, SecondaryPrivateIpAddressCount=per_node)
            ["NetworkInterface"] for _ in range(count)]  # fmt: skip
    output = ",".join(
        a["PrivateIpAddress"] for eni in made for a in eni["PrivateIpAddresses"] if not a.get("Primary")
    )
    return [eni["NetworkInterfaceId"] for eni in made], output


@pytest.mark.parametrize("released", [False, True], ids=["addresses-kept", "addresses-released"])
def test_an_upgraded_stack_answers_its_published_addresses_in_the_published_order(
    world: World, released: bool
) -> None:
    """The Compute stack's volumes take addresses 0 and 1 of the FloatingIps output (hubspoke/k8s/storage.py)
    and a PersistentVolume's NFS server cannot change in place (Kubernetes API, PersistentVolumeSpec is
    immutable after creation), so the upgrade's Create answers exactly the old output. Whether removing
    SecondaryPrivateIpAddressCount releases the addresses is up to the interface's update handler (its registry
    schema lists ec2:UnassignPrivateIpAddresses), so both cases: released addresses are assigned back."""
    ec2 = boto3.client("ec2")
    enis, old_output = _old_release(ec2, 4, 3)
    # A failover moved one before the upgrade: the output (an attribute from the interface's create) did not change.
    _move(ec2, old_output.split(",")[0], enis[0], enis[3])
    if released:
        for eni_id, addresses in floating.held(ec2, enis).items():
            ec2.unassign_private_ip_addresses(NetworkInterfaceId=eni_id, PrivateIpAddresses=addresses)
    cfn = boto3.client("cloudformation")
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {"FloatingIps": {"Value": old_output}}}  # fmt: skip
    stack = cfn.create_stack(StackName="hubspoke-dev-storage-old", TemplateBody=json.dumps(template))[
        "StackId"
    ]
    props = {"ClusterName": "dev-hub", "NetworkInterfaceIds": enis, "Counts": ["3"] * 4,
             "PublishedOutput": "FloatingIps", "WaitSeconds": "3000"}  # fmt: skip
    event = {"RequestType": "Create", "ResourceType": "Custom::CnqFloatingIps", "LogicalResourceId": "FloatingIps",
             "ResourceProperties": props, "StackId": stack}  # fmt: skip
    assert on_event(event, ROOMY)["Data"]["Addresses"] == old_output
    assert sorted(a for held in floating.held(ec2, enis).values() for a in held) == sorted(
        old_output.split(",")
    )
