"""Custom::CnqNodeProtection with moto's EC2 and CloudFormation, and what a failed first create leaves behind.

A protected instance cannot be terminated (EC2 User Guide, "Enable termination protection"), so a node
protected before the whole stack succeeded would turn a rollback into ROLLBACK_FAILED. CloudFormation
still waits for a Create or Update only in CREATE_IN_PROGRESS, UPDATE_IN_PROGRESS and
UPDATE_ROLLBACK_IN_PROGRESS (CloudFormation User Guide, "Stack status codes").
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import ROOMY, World, drive
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")


def _protection(
    world: World, instances: list[str], request: str = "Create", **old: list[str]
) -> dict[str, Any]:
    props = {"ClusterName": "dev-hub", "NodeInstanceIds": instances, "WaitSeconds": "3000"}
    event = {"RequestType": request, "ResourceType": "Custom::CnqNodeProtection", "StackId": world.stack_id,
             "LogicalResourceId": "NodeProtection", "ResourceProperties": props}  # fmt: skip
    if request != "Create":
        event["PhysicalResourceId"] = "cnq-protection-dev-hub"
    if old:
        event["OldResourceProperties"] = {**props, "NodeInstanceIds": old["was"]}
    return event


def test_create_protects_every_node_while_the_stack_is_created(world: World) -> None:
    instances = world.instances(4, "dev-hub")
    answer = drive(_protection(world, instances))
    assert answer["PhysicalResourceId"] == "cnq-protection-dev-hub"
    assert all(map(world.protected, instances))


@pytest.mark.parametrize("status", ["ROLLBACK_IN_PROGRESS", "DELETE_IN_PROGRESS", "CREATE_COMPLETE"])
def test_nothing_is_protected_once_cloudformation_no_longer_waits(world: World, status: str) -> None:
    instances = world.instances(4, "dev-hub")
    world.stack_status(status)
    with pytest.raises(ProvisioningError, match=f"the stack is {status}: CloudFormation no longer waits"):
        on_event(_protection(world, instances), ROOMY)
    assert not any(map(world.protected, instances))


def test_an_update_lifts_protection_from_the_nodes_it_drops(world: World) -> None:
    instances = world.instances(5, "dev-hub")
    drive(_protection(world, instances))
    world.stack_status("UPDATE_IN_PROGRESS")
    drive(_protection(world, instances[:4], request="Update", was=instances))
    assert not world.protected(instances[4]), "CloudFormation terminates it in the clean-up phase"
    assert all(map(world.protected, instances[:4]))


def test_delete_lifts_protection_even_when_a_node_is_already_gone(world: World) -> None:
    instances = world.instances(4, "dev-hub")
    drive(_protection(world, instances))
    world.stack_status("DELETE_IN_PROGRESS")
    ec2 = boto3.client("ec2")
    ec2.modify_instance_attribute(InstanceId=instances[3], DisableApiTermination={"Value": False})
    ec2.terminate_instances(InstanceIds=[instances[3]])
    gone = "i-0123456789abcdef0"
    drive(_protection(world, [*instances, gone], request="Delete"))
    assert not any(map(world.protected, instances[:3]))


def test_a_failed_portal_create_leaves_no_node_protected(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    """A spoke's first create: the cluster forms (the `formed` clusters), the portal fails, CloudFormation rolls back
    the nodes. The protection resource depends on the portal, so it never ran."""
    world, spoke_nodes = formed, formed.nodes["dev-spoke"]
    hub.fail("POST", r"^/v2/portal/hubs/\d+/accept", status=400, error_class="portal_error")
    with pytest.raises(ProvisioningError, match="portal_error"):
        drive(world.portal_event(hub, spoke))
    assert not any(map(world.protected, spoke_nodes)), "the rollback can terminate every spoke node"


def test_polling_stops_once_cloudformation_gave_up_on_the_create(world: World, hub: FakeQumulo) -> None:
    """The Provider framework starts its waiter and returns; after a cancelled create the stack rolls back
    and the waiter's next poll must not go on forming a cluster on nodes being terminated."""
    hub.down_node(hub.node_ips[3])
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"))
    merged = {**event, **on_event(event, ROOMY)}
    assert is_complete(merged, ROOMY) == {"IsComplete": False}
    world.stack_status("ROLLBACK_IN_PROGRESS")
    hub.up()
    before = len(hub.calls)
    with pytest.raises(ProvisioningError, match="ROLLBACK_IN_PROGRESS: CloudFormation no longer waits"):
        is_complete(merged, ROOMY)
    assert len(hub.calls) == before and not hub.create_requests


def _nodes_with_volumes(count: int) -> list[str]:
    """Nodes as the launch template makes them: every EBS volume with DeleteOnTermination false."""
    mappings = [{"DeviceName": d, "Ebs": {"VolumeSize": 8, "DeleteOnTermination": False}}
                for d in ("/dev/sda1", "/dev/xvdb")]  # fmt: skip
    tags = [{"ResourceType": "instance", "Tags": [{"Key": "hubspoke:cnq-cluster", "Value": "dev-hub"}]}]
    made = boto3.client("ec2").run_instances(ImageId="ami-12c6146b", MinCount=count, MaxCount=count,
                                             BlockDeviceMappings=mappings, TagSpecifications=tags)  # fmt: skip
    return [i["InstanceId"] for i in made["Instances"]]


def _left_after_termination(instances: list[str]) -> int:
    """How many volumes outlive their terminated instances (EC2 deletes those marked DeleteOnTermination)."""
    ec2 = boto3.client("ec2")
    for instance_id in instances:
        ec2.modify_instance_attribute(InstanceId=instance_id, DisableApiTermination={"Value": False})
    ec2.terminate_instances(InstanceIds=instances)
    return len(ec2.describe_volumes()["Volumes"])


def test_a_first_create_that_fails_before_node_protection_leaves_no_volume(
    world: World, hub: FakeQumulo
) -> None:
    """The cluster's first Create marks the node volumes DeleteOnTermination (ModifyInstanceAttribute
    BlockDeviceMappings Ebs.DeleteOnTermination, botocore ec2 model), so a formation that fails and rolls back
    terminates the nodes with their volumes; nothing billed is left for the retry."""
    instances = _nodes_with_volumes(4)
    assert len(boto3.client("ec2").describe_volumes()["Volumes"]) == 8
    on_event(world.cluster_event(hub, "hub", instances), ROOMY)
    assert _left_after_termination(instances) == 0


def test_node_protection_keeps_the_volumes_of_a_formed_cluster(world: World) -> None:
    """From NodeProtection on, a replaced or deleted node's volumes are retained (DeleteOnTermination false)."""
    instances = _nodes_with_volumes(2)
    boto3.client("ec2").modify_instance_attribute(
        InstanceId=instances[0],
        BlockDeviceMappings=[{"DeviceName": "/dev/xvdb", "Ebs": {"DeleteOnTermination": True}}],
    )
    drive(_protection(world, instances))
    assert _left_after_termination(instances) == 4


def test_a_rolled_back_first_create_deletes_the_volumes_node_protection_kept(world: World) -> None:
    """A failure after NodeProtection (the persistent-storage step comes later) rolls the first create back
    (ROLLBACK_IN_PROGRESS, CloudFormation User Guide "Stack status codes"): its Delete hands the volumes back to
    their instances' termination."""
    instances = _nodes_with_volumes(2)
    drive(_protection(world, instances))
    world.stack_status("ROLLBACK_IN_PROGRESS")
    drive(_protection(world, instances, request="Delete"))
    assert _left_after_termination(instances) == 0


def test_the_create_record_outlasts_a_throttled_tag_write(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The create has landed when the record is written, so a throttled CreateTags (RequestLimitExceeded, a code
    botocore's standard retry mode treats as throttling: botocore 1.44.18, retries/standard.py) is retried
    instead of failing the resource; any other error still fails it."""
    from botocore.exceptions import ClientError

    from hubspoke.constructs.cnq.runtime import nodes

    monkeypatch.setattr(nodes, "TAG_BACKOFF_SECONDS", 0.0)
    ec2 = boto3.client("ec2")
    instance = world.instances(1, "dev-hub")[0]
    real, refusals = ec2.create_tags, iter(["RequestLimitExceeded", "RequestLimitExceeded"])

    def throttled(**kwargs: Any) -> Any:
        code = next(refusals, None)
        if code:
            raise ClientError({"Error": {"Code": code, "Message": "Request limit exceeded."}}, "CreateTags")
        return real(**kwargs)

    monkeypatch.setattr(ec2, "create_tags", throttled)
    ledger = nodes.CreateTag(ec2, instance)
    ledger.record()
    assert ledger.sent()
    refusals = iter(["UnauthorizedOperation"])
    with pytest.raises(ClientError, match="UnauthorizedOperation"):
        ledger.record()
