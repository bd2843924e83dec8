"""Custom::CnqNodeShape against moto's EC2: what the running nodes have vs what the template asks.

CloudFormation replaces an instance whose ImageId or BlockDeviceMappings change and an ENI (so its
instance) whose SubnetId changes; it stops and starts one whose InstanceType or UserData changes
(CloudFormation resource reference, "Update requires"). The guard refuses any of these while nodes run.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import boto3
import pytest

from hubspoke.constructs.cnq.runtime.provisioner import on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from hubspoke.names import CNQ_CLUSTER_TAG
from tests.constructs.cnq.conftest import IMAGE, INSTANCE_TYPE, ROOMY, World, drive

SCRIPT = "#!/bin/bash\necho node script, release 1\n"
# A small layout in the shape node/volumes.py renders: boot, two write-cache volumes, one DKV volume.
VOLUMES = [
    {"device": "/dev/sda1", "type": "gp3", "size_gib": 256, "iops": None, "throughput_mibps": None},
    {"device": "/dev/xvdb", "type": "gp3", "size_gib": 16, "iops": 3000, "throughput_mibps": 125},
    {"device": "/dev/xvdc", "type": "gp3", "size_gib": 16, "iops": 3000, "throughput_mibps": 125},
    {"device": "/dev/xvdd", "type": "gp3", "size_gib": 4, "iops": 3000, "throughput_mibps": 125},
]


@pytest.fixture
def subnets(world: World) -> tuple[str, str]:
    ec2 = boto3.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.10.0.0/16")["Vpc"]["VpcId"]
    return tuple(  # type: ignore[return-value]
        ec2.create_subnet(VpcId=vpc, CidrBlock=cidr)["Subnet"]["SubnetId"]
        for cidr in ("10.10.0.0/18", "10.10.64.0/18")
    )


def launch(subnet: str, count: int = 4) -> list[str]:
    ec2 = boto3.client("ec2")
    made = ec2.run_instances(
        ImageId=IMAGE, InstanceType=INSTANCE_TYPE, MinCount=count, MaxCount=count, SubnetId=subnet,
        UserData=SCRIPT,
        BlockDeviceMappings=[{"DeviceName": v["device"], "Ebs": {"VolumeSize": v["size_gib"], "VolumeType": v["type"],
                              "Encrypted": True, "DeleteOnTermination": False}} for v in VOLUMES],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": CNQ_CLUSTER_TAG, "Value": "dev-hub"}]}],
    )  # fmt: skip
    return [i["InstanceId"] for i in made["Instances"]]


def guard(subnet: str, *, request: str = "Update", script: str = SCRIPT, volumes: Any = VOLUMES,
          image: str = IMAGE, itype: str = INSTANCE_TYPE) -> dict[str, Any]:  # fmt: skip
    props = {"ClusterName": "dev-hub", "ImageId": image, "InstanceType": itype, "SubnetId": subnet,
             "UserDataSha256": hashlib.sha256(script.encode()).hexdigest(),
             "BlockDevices": json.dumps(volumes, sort_keys=True)}  # fmt: skip
    return {"RequestType": request, "ResourceType": "Custom::CnqNodeShape", "LogicalResourceId": "NodeShape",
            "PhysicalResourceId": "cnq-nodes-dev-hub", "ResourceProperties": props}  # fmt: skip


def test_the_shape_the_nodes_run_passes_a_rollback_and_a_first_create_anything(
    subnets: tuple[str, str],
) -> None:
    """Before any node runs there is nothing to protect: a Create passes whatever it asks. A rollback sends the
    properties the nodes were built from as ResourceProperties and the refused ones as OldResourceProperties
    (CloudFormation User Guide, "Custom resource request objects"): compared with the running nodes it passes,
    where a comparison with the old properties would refuse it and leave the stack in UPDATE_ROLLBACK_FAILED.

    Each keeps its physical id: on an Update a new one is a replacement, after which CloudFormation sends a
    Delete for the old (CloudFormation User Guide, "Custom resource response objects", PhysicalResourceId)."""
    create = guard(subnets[1], request="Create", script="anything", volumes=VOLUMES[:1])  # no node yet
    del create["PhysicalResourceId"]  # CloudFormation sends none with a Create
    created = drive(create)
    assert (created["PhysicalResourceId"], created["IsComplete"]) == ("cnq-nodes-dev-hub", True)
    launch(subnets[0])
    rollback = guard(subnets[0])
    rollback["OldResourceProperties"] = guard(subnets[0], script="#!/bin/bash\necho release 2\n")[
        "ResourceProperties"
    ]
    rolled_back = drive(rollback)
    assert (rolled_back["PhysicalResourceId"], rolled_back["IsComplete"]) == ("cnq-nodes-dev-hub", True)


def test_new_user_data_is_refused(subnets: tuple[str, str]) -> None:
    launch(subnets[0])
    new = hashlib.sha256(b"#!/bin/bash\necho release 2\n").hexdigest()[:12]
    with pytest.raises(ProvisioningError) as raised:
        on_event(guard(subnets[0], script="#!/bin/bash\necho release 2\n"), ROOMY)
    text = str(raised.value)
    assert f"user data sha256 {hashlib.sha256(SCRIPT.encode()).hexdigest()[:12]} -> {new}" in text
    assert "4 of 4 differ" in text and "cloud-init runs it once per instance" in text
    assert "When the node-shape guard refuses" in text


def test_other_block_devices_are_refused(subnets: tuple[str, str]) -> None:
    ids = launch(subnets[0])
    more = [*VOLUMES, {**VOLUMES[-1], "device": "/dev/xvde"}]
    with pytest.raises(ProvisioningError, match=r"/dev/xvde missing"):
        on_event(guard(subnets[0], volumes=more), ROOMY)
    bigger = [*VOLUMES[:1], {**VOLUMES[1], "size_gib": 32}, *VOLUMES[2:]]
    with pytest.raises(ProvisioningError, match=r"/dev/xvdb GiB 16 -> 32"):
        on_event(guard(subnets[0], volumes=bigger), ROOMY)
    ec2 = boto3.client("ec2")
    [attached] = [
        m["Ebs"]["VolumeId"]
        for m in ec2.describe_instances(InstanceIds=[ids[0]])["Reservations"][0]["Instances"][0][
            "BlockDeviceMappings"
        ]
        if m["DeviceName"] == "/dev/xvdc"
    ]
    ec2.modify_volume(VolumeId=attached, Iops=6000)
    with pytest.raises(ProvisioningError, match=r"1 of 4 differ.*/dev/xvdc IOPS 6000 -> 3000"):
        on_event(guard(subnets[0]), ROOMY)


def test_another_subnet_image_or_type_is_refused(subnets: tuple[str, str]) -> None:
    launch(subnets[0])
    with pytest.raises(ProvisioningError, match=f"subnet {subnets[0]} -> {subnets[1]}"):
        on_event(guard(subnets[1]), ROOMY)
    with pytest.raises(ProvisioningError, match=f"image {IMAGE} -> ami-0abcdef1234567890"):
        on_event(guard(subnets[0], image="ami-0abcdef1234567890"), ROOMY)
    with pytest.raises(ProvisioningError, match=f"instance type {INSTANCE_TYPE} -> i7i.8xlarge"):
        on_event(guard(subnets[0], itype="i7i.8xlarge"), ROOMY)
